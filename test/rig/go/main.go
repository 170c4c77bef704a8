// Command rig brings up a Kubernetes control plane of real components on
// loopback for CAPTF's tests and for people: etcd, kube-apiserver,
// kube-controller-manager, a process kubelet that runs Job pods under
// bubblewrap, a local OCI registry, and a Git server over HTTPS and SSH.
//
//	rig up --dir DIR [--tier integration|e2e] [--owner-pid PID]
//	rig down --dir DIR
//	rig restart apiserver|etcd --dir DIR
//	rig pause etcd SECONDS --dir DIR
//	rig compact etcd --dir DIR
//	rig stop registry SECONDS --dir DIR
//	rig user --dir DIR --name NAME [--group G]...
//	rig image push --dir DIR --rootfs ROOTFS --ref REPO:TAG [--entrypoint a,b] [--env K=V]...
//
// Every failure prints one line naming the cause and the log to read.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = cmdUp(os.Args[2:])
	case "down":
		err = cmdDown(os.Args[2:])
	case "serve":
		err = cmdServe(os.Args[2:])
	case "restart":
		err = cmdRestart(os.Args[2:])
	case "pause":
		err = cmdPause(os.Args[2:])
	case "compact":
		err = cmdCompact(os.Args[2:])
	case "stop":
		err = cmdStop(os.Args[2:])
	case "user":
		err = cmdUser(os.Args[2:])
	case "image":
		err = cmdImage(os.Args[2:])
	case "proxy":
		err = cmdProxy(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rig: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  rig up --dir DIR [--tier integration|e2e] [--owner-pid PID]
  rig down --dir DIR
  rig restart apiserver|etcd --dir DIR
  rig pause etcd SECONDS --dir DIR
  rig compact etcd --dir DIR
  rig stop registry SECONDS --dir DIR
  rig user --dir DIR --name NAME [--group GROUP]...
  rig proxy --dir DIR --kubeconfig KUBECONFIG --out KUBECONFIG
  rig image push --dir DIR --rootfs ROOTFS --ref REPO:TAG [--entrypoint CMD,ARG] [--env K=V]...
`)
	os.Exit(2)
}
