// Command cert-manager is the rig's cert-manager: cert-manager v1.21.0's own
// controller and cainjector library packages wired into one binary, because
// the proxy serves cert-manager's root module but not its cmd/* modules.
//
// It runs the controllers that selfSigned and CA Issuers/ClusterIssuers
// need (cert-manager's default set minus ACME, Vault, Venafi, the
// ingress-shim and the metrics-only certificates-metrics controller) and the
// cainjector for webhook configurations, CRD conversion webhooks and
// APIServices. No leader election, no listening sockets (metrics and health
// probes are off), logs on stderr, SIGTERM/SIGINT stop it.
//
//	cert-manager --kubeconfig PATH [--cluster-resource-namespace NS] [--workers N] [--v N]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The Issuer implementations the issuers/clusterissuers controllers
	// look up by type (they register themselves in init).
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers is cert-manager's DefaultEnabledControllers
// (internal/apis/config/controller/v1alpha1/defaults.go) restricted to the
// selfSigned and CA issuer types. The approver matters: signers only sign
// CertificateRequests whose Approved condition is True.
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	trigger.ControllerName,
	issuing.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	fs := flag.NewFlagSet("cert-manager", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	clusterNS := fs.String("cluster-resource-namespace", "kube-system", "namespace of ClusterIssuers' secrets")
	workers := fs.Int("workers", 5, "workers per controller")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags) // klog writes to stderr by default
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (cert-manager: 2 info, 4 debug)")
	_ = fs.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cert-manager: --kubeconfig is required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := logf.Log
	ctrl.SetLogger(log.WithName("cainjector"))
	ctx = logf.NewContext(ctx, log)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return runControllers(gctx, *kubeconfig, *clusterNS, *workers) })
	g.Go(func() error { return runCAInjector(gctx, *kubeconfig) })
	err := g.Wait()
	klog.Flush()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "cert-manager: %v\n", err)
		os.Exit(1)
	}
	log.Info("stopped")
	klog.Flush()
}

// runControllers does what cert-manager's cmd/controller does once it holds
// the lease: build each enabled controller from the shared context factory,
// then start the shared informers, then run the control loops.
func runControllers(ctx context.Context, kubeconfig, clusterNS string, workers int) error {
	opts := controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace:        clusterNS,
			ClusterIssuerAmbientCredentials: true,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	var loops []controllerpkg.Interface
	for _, name := range controllers {
		construct, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered", name)
		}
		iface, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		loops = append(loops, iface)
	}
	// Informers are requested while the controllers register; start them
	// only afterwards so that every requested informer runs.
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	logf.Log.Info("starting controllers", "controllers", controllers)

	g, gctx := errgroup.WithContext(ctx)
	for _, loop := range loops {
		g.Go(func() error { return loop.Run(workers, gctx) })
	}
	err = g.Wait()
	shared.KubeSharedInformerFactory.Shutdown()
	shared.SharedInformerFactory.Shutdown()
	shared.HTTP01ResourceMetadataInformersFactory.Shutdown()
	return err
}

// runCAInjector is cert-manager's cmd/cainjector: a controller-runtime
// manager with cainjector.RegisterAllInjectors, Secrets read uncached.
func runCAInjector(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "cert-manager-cainjector"
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(admissionregistrationv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ReaderFailOnMissingInformer: true},
		// As upstream: Secrets are watched as metadata only and read
		// directly, so their data is never cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return fmt.Errorf("cainjector manager: %w", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return fmt.Errorf("cainjector: %w", err)
	}
	return mgr.Start(ctx)
}
