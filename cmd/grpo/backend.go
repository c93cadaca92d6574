package main

import "flag"

// deviceFlag declares --device on a command's flag set; the loader opens
// the backend it names.
func deviceFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "device", "cpu", "compute backend: cpu, or cuda in a binary built with -tags cuda")
}

// devicesFlag declares --devices (config.DeviceNames, UseDevicesFlag).
func devicesFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "devices", "", `devices to use, overriding --device: "cuda:1", "cuda:0-7", "cuda:0,2" (indices count the devices CUDA_VISIBLE_DEVICES leaves visible), "cpu:0-1" (cpu replicas); train: data parallel, eval: the examples split over a model per device, bench: each device in turn, serve: a replica per device`)
}
