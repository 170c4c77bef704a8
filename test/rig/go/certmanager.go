package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// startCertManager installs cert-manager's CRDs from its module and runs its
// controllers and CA injector (test/rig/certmanager: one binary, selfSigned
// and CA issuers) as a rig component. Providers installed on the rig then
// get their webhook certificates and caBundles the way they do in a real
// cluster. cert-manager's own webhook is not run: nothing defaults or
// validates cert-manager objects (docs/decisions/rig-pod-network.md).
func (r *rig) startCertManager() error {
	src, bin := os.Getenv("RIG_CERT_MANAGER_SRC"), os.Getenv("RIG_CERT_MANAGER_BIN")
	if src == "" || bin == "" {
		return fmt.Errorf("the install tier needs RIG_CERT_MANAGER_SRC and RIG_CERT_MANAGER_BIN (test/rig/rig sets them)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", r.l.p("kubeconfig"))
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files, err := filepath.Glob(filepath.Join(src, "deploy/crds/*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no cert-manager CRDs under %s/deploy/crds", src)
	}
	names, err := installCRDs(ctx, dyn, files, func(*unstructured.Unstructured) error { return nil })
	if err != nil {
		return err
	}
	if err := waitAllEstablished(ctx, dyn, names); err != nil {
		return err
	}
	c, err := startComponent(r.l.logs(), "cert-manager", bin, []string{"--kubeconfig=" + r.l.p("kubeconfig")}, nil)
	if err != nil {
		return err
	}
	r.certManager = c
	return nil
}
