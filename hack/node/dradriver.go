package main

// A minimal DRA driver for the end-to-end suite (issue 26, item 7), built on
// k8s.io/dynamic-resource-allocation's kubelet plugin helper at the pinned
// version: it publishes one ResourceSlice with a few devices for its node and
// "prepares" allocated devices by recording them (no CDI: Debian's containerd
// 1.6 has no CDI support, and the test pods need no device files).
//
//	knode dra-driver --kubeconfig=... --node-name=... --kubelet-root-dir=... [--devices=2]

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

const driverName = "e2e.pyscheduler.dev"

type draDriver struct{}

func (draDriver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		var devices []kubeletplugin.Device
		if claim.Status.Allocation != nil {
			for _, allocated := range claim.Status.Allocation.Devices.Results {
				if allocated.Driver != driverName {
					continue
				}
				devices = append(devices, kubeletplugin.Device{
					Requests:   []string{allocated.Request},
					PoolName:   allocated.Pool,
					DeviceName: allocated.Device,
				})
				klog.InfoS("prepared", "claim", klog.KObj(claim), "pool", allocated.Pool, "device", allocated.Device)
			}
		}
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return result, nil
}

func (draDriver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		klog.InfoS("unprepared", "claim", claim.String())
		result[claim.UID] = nil
	}
	return result, nil
}

func (draDriver) HandleError(_ context.Context, err error, msg string) {
	klog.ErrorS(err, msg)
}

func runDRADriver(args []string) int {
	flags := flag.NewFlagSet("dra-driver", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the API server")
	nodeName := flags.String("node-name", "", "the node this driver serves")
	rootDir := flags.String("kubelet-root-dir", "/var/lib/kubelet", "the kubelet's --root-dir")
	count := flags.Int("devices", 2, "devices to publish")
	klog.InitFlags(flags)
	if err := flags.Parse(args); err != nil {
		return 2
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	registry := filepath.Join(*rootDir, "plugins_registry")
	data := filepath.Join(*rootDir, "plugins", driverName)
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	helper, err := kubeletplugin.Start(ctx, draDriver{},
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(*nodeName),
		kubeletplugin.DriverName(driverName),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(data),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer helper.Stop()
	devices := make([]resourceapi.Device, *count)
	for i := range devices {
		devices[i] = resourceapi.Device{Name: fmt.Sprintf("dev-%d", i)}
	}
	resources := resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		*nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
	if err := helper.PublishResources(ctx, resources); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	klog.InfoS("published", "driver", driverName, "node", *nodeName, "devices", *count)
	<-ctx.Done()
	return 0
}
