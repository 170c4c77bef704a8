package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1",
		Resource: "customresourcedefinitions"}
	mutatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
		Resource: "mutatingwebhookconfigurations"}
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
		Resource: "validatingwebhookconfigurations"}
)

// startCAPI installs Cluster API's CRDs and webhooks from the module cache,
// rewritten the way envtest does (url: + caBundle instead of a Service), and
// runs the core manager as a process. Returns the clusterctl path.
func (r *rig) startCAPI() (string, error) {
	src, bin := os.Getenv("RIG_CAPI_SRC"), os.Getenv("RIG_CAPI_BIN")
	if src == "" || bin == "" {
		return "", fmt.Errorf("the capi tier needs RIG_CAPI_SRC and RIG_CAPI_BIN (test/rig/rig sets them)")
	}
	if err := r.pki.issue("capi-webhook", "capi-webhook", nil, true, []string{"localhost"},
		[]net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return "", err
	}
	certDir := r.l.p("capi-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", err
	}
	for from, to := range map[string]string{"capi-webhook.crt": "tls.crt", "capi-webhook.key": "tls.key"} {
		b, err := os.ReadFile(r.pki.path(from))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(certDir, to), b, 0o600); err != nil {
			return "", err
		}
	}
	ca, err := os.ReadFile(r.pki.path("ca.crt"))
	if err != nil {
		return "", err
	}
	caBundle := base64.StdEncoding.EncodeToString(ca)
	var hook, health int
	if hook, err = freePort(); err != nil {
		return "", err
	}
	if health, err = freePort(); err != nil {
		return "", err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", hook)
	cfg, err := clientcmd.BuildConfigFromFlags("", r.l.p("kubeconfig"))
	if err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds, err := filepath.Glob(filepath.Join(src, "core/config/crd/bases/*.yaml"))
	if err != nil || len(crds) == 0 {
		return "", fmt.Errorf("no Cluster API CRDs under %s/core/config/crd/bases", src)
	}
	names, err := installCRDs(ctx, dyn, crds, func(o *unstructured.Unstructured) error {
		if versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions"); len(versions) > 1 {
			conv := map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig":             map[string]any{"url": base + "/convert", "caBundle": caBundle}}}
			return unstructured.SetNestedMap(o.Object, conv, "spec", "conversion")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	hooks, err := readObjects(filepath.Join(src, "core/config/webhook/manifests.yaml"))
	if err != nil {
		return "", err
	}
	for _, o := range hooks {
		list, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for i := range list {
			w := list[i].(map[string]any)
			cc := w["clientConfig"].(map[string]any)
			path, _, _ := unstructured.NestedString(cc, "service", "path")
			w["clientConfig"] = map[string]any{"url": base + path, "caBundle": caBundle}
		}
		_ = unstructured.SetNestedSlice(o.Object, list, "webhooks")
		o.SetName("capi-" + o.GetName())
		gvr := validatingGVR
		if o.GetKind() == "MutatingWebhookConfiguration" {
			gvr = mutatingGVR
		}
		if err := createOrReplace(ctx, dyn.Resource(gvr), o); err != nil {
			return "", fmt.Errorf("registering %s: %v", o.GetName(), err)
		}
	}
	if err := waitAllEstablished(ctx, dyn, names); err != nil {
		return "", err
	}
	c, err := startComponent(r.l.logs(), "capi-manager", filepath.Join(bin, "capi-manager"), []string{
		"--kubeconfig=" + r.l.p("kubeconfig"), "--leader-elect=false",
		fmt.Sprintf("--webhook-port=%d", hook), "--webhook-cert-dir=" + certDir,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
		"--diagnostics-address=127.0.0.1:0", "--insecure-diagnostics=true",
		"--feature-gates=ClusterTopology=true,MachinePool=true",
	}, nil)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", health)
	if err := c.waitReady(120*time.Second, func() error { return httpOK(httpPlain, url) }); err != nil {
		c.stop(5 * time.Second)
		return "", err
	}
	r.capi = c
	return filepath.Join(bin, "clusterctl"), nil
}

// installCRDs creates (or replaces) every CustomResourceDefinition in
// files, after mutate, and returns their names.
func installCRDs(ctx context.Context, dyn dynamic.Interface, files []string,
	mutate func(*unstructured.Unstructured) error) ([]string, error) {
	var names []string
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if err := mutate(o); err != nil {
				return nil, err
			}
			if err := createOrReplace(ctx, dyn.Resource(crdGVR), o); err != nil {
				return nil, fmt.Errorf("installing CRD %s: %v", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	return names, nil
}

func waitAllEstablished(ctx context.Context, dyn dynamic.Interface, names []string) error {
	for _, n := range names {
		if err := waitEstablished(ctx, dyn, n); err != nil {
			return err
		}
	}
	return nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---") {
		if strings.TrimSpace(strings.Trim(doc, "-")) == "" {
			continue
		}
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

func createOrReplace(ctx context.Context, res dynamic.NamespaceableResourceInterface, o *unstructured.Unstructured) error {
	_, err := res.Create(ctx, o, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, err := res.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		o.SetResourceVersion(cur.GetResourceVersion())
		_, err = res.Update(ctx, o, metav1.UpdateOptions{})
		return err
	}
	return err
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	for {
		o, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, c := range conds {
				m := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s was not established: %v", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
