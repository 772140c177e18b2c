// Command knode is a multi-call binary holding the upstream node components
// (kubelet, kube-proxy) that the end-to-end suite (`make e2e`) runs on one real
// node. It is a module of its own, apart from hack/controlplane, so that
// `make test` never builds or needs node dependencies.
//
//	knode kubelet|kube-proxy|dra-driver [flags]
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

const usage = "usage: knode kubelet|kube-proxy|dra-driver [flags]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	component, args := os.Args[1], os.Args[2:]
	switch component {
	case "kubelet":
		command := kubelet.NewKubeletCommand(context.Background())
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-proxy":
		command := proxy.NewProxyCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "dra-driver":
		os.Exit(runDRADriver(args))
	case "version":
		fmt.Println("knode for Kubernetes v1.36.3")
	default:
		fmt.Fprintf(os.Stderr, "unknown component %q\n%s\n", component, usage)
		os.Exit(2)
	}
}
