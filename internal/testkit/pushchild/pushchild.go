// Package pushchild runs parley's command line as a child process of a test
// that pushes to the Web Push stand-in (webpushsvc): the test binary itself,
// started by Command, with the stand-in's push.Net given in Go. parley's own
// binary has no such switch: it pushes only to public https endpoints that a
// public CA vouches for, and no flag, config key or environment variable
// changes that. Only a TestMain that calls Main reads this package's variable.
package pushchild

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"

	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// envCA carries the stand-in's CA (PEM) to the child.
const envCA = "PARLEY_TEST_WEBPUSH_CA"

// envProxy carries the Chromium push service stand-in's proxy (GCM.Proxy) to
// the child: its pushes to Chromium's endpoints go there (ProxyEnv).
const envProxy = "PARLEY_TEST_WEBPUSH_PROXY"

// ProxyEnv is the environment entry that has the child push through g's
// proxy, to a real Chromium subscribed at the stand-in.
func ProxyEnv(g *webpushsvc.GCM) string { return envProxy + "=" + g.Proxy().String() }

// Main runs parley's command line with the stand-in's Net and exits when this
// test binary was started by Command; otherwise it returns at once. Call it
// first in TestMain.
func Main() {
	ca := os.Getenv(envCA)
	if ca == "" {
		return
	}
	net, err := webpushsvc.NetFromPEM([]byte(ca))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushchild:", err)
		os.Exit(2)
	}
	if p := os.Getenv(envProxy); p != "" {
		u, err := url.Parse(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pushchild:", err)
			os.Exit(2)
		}
		net.Proxy, net.Lookup = http.ProxyURL(u), webpushsvc.Lookup
	}
	os.Exit(cli.MainWith(cli.ReadBuild(cli.Build{}), cli.Parts{PushNet: net}, os.Args[1:], os.Stdout, os.Stderr))
}

// Command is `parley args…` as this test binary (whose TestMain calls Main),
// pushing to the stand-in, ended by ctx as exec.CommandContext; its Env holds
// the test's environment and the stand-in's CA: append to it, do not replace
// it.
func Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), envCA+"="+string(webpushsvc.CAPEM()))
	return cmd
}
