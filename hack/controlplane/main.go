// Command kcp is a multi-call binary holding the upstream control-plane
// components that this project's tests, demo and benchmark run against.
//
// Each invocation runs exactly one component, chosen by the first argument:
//
//	kcp etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubectl [flags]
//
// Components must run as separate processes: the upstream commands each
// install a process-wide signal handler that may only be set up once.
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

const usage = "usage: kcp etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubectl [flags]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	component, args := os.Args[1], os.Args[2:]
	switch component {
	case "etcd":
		// etcdmain parses os.Args[1:], so hand it a program name first.
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		command := apiserver.NewAPIServerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-controller-manager":
		command := controllermanager.NewControllerManagerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-scheduler":
		command := scheduler.NewSchedulerCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kubectl":
		command := kubectl.NewDefaultKubectlCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "version":
		fmt.Println("kcp for Kubernetes v1.36.3")
	default:
		fmt.Fprintf(os.Stderr, "unknown component %q\n%s\n", component, usage)
		os.Exit(2)
	}
}
