package cli_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
)

// withProtocol is the -ldflags of a parley build that says version and speaks
// cluster protocol p: the same code as this one, another release as far as
// the link can tell.
func withProtocol(version string, p int) string {
	return "-X main.version=" + version + " -X github.com/parleyhq/parley/internal/cluster.protocol=" + strconv.Itoa(p)
}

// joinToken makes a join token for node on the hub of data.
func joinToken(t *testing.T, bin string, env []string, data, node string) string {
	t.Helper()
	cmd := exec.Command(bin, "join-token", "--data", data, "--name", node)
	cmd.Env = env
	out, err := cmd.Output()
	m := joinLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("parley join-token: %q %v", out, err)
	}
	return string(m[1])
}

// waitLog waits for a daemon's log to say want.
func waitLog(t *testing.T, p *daemonProc, who, want string) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, func() bool { return strings.Contains(p.log.String(), want) },
		"the %s's log never said %q:\n%s", who, want, testkit.Later(func() any { return p.log.String() }))
}

// Three real builds of parley: the hub's, one a cluster protocol ahead
// (the next minor release) and one two ahead. A node one protocol ahead
// joins and links, named once in the hub's log; one two ahead is refused at
// join, and, joined by an older build, refused at its link with the same
// reason on both sides, and never listed online.
func TestAHubTakesANodeOneProtocolApartAndRefusesOneTwoApart(t *testing.T) {
	t.Parallel()
	p := cluster.Protocol()
	bin := testkit.ParleyBinary(t)
	next := testkit.ParleyBinaryWith(t, withProtocol("v0.9.0", p+1))
	far := testkit.ParleyBinaryWith(t, withProtocol("v0.10.0", p+2))
	if out, err := run(t, next, machineEnv(t), "version"); err != nil ||
		!strings.Contains(out, "parley v0.9.0 (") || !strings.Contains(out, "cluster protocol "+strconv.Itoa(p+1)+")") {
		t.Fatalf("parley version of the build one protocol ahead: %q %v", out, err)
	}
	hubEnv, hubData := machineEnv(t), filepath.Join(t.TempDir(), "hub")
	hub := startServe(t, bin, hubEnv, "--data", hubData, "--cluster-listen", "127.0.0.1:0")
	hub.line(t, hubLine)

	// One ahead: joins, links, listed online.
	laptopEnv, laptopData := machineEnv(t), filepath.Join(t.TempDir(), "laptop")
	if out, err := run(t, next, laptopEnv, "join", joinToken(t, bin, hubEnv, hubData, "laptop"), "--data", laptopData); err != nil {
		t.Fatalf("parley join from a build one protocol ahead: %s", out)
	}
	laptop := startServe(t, next, laptopEnv, "--data", laptopData)
	var list string
	testkit.Eventually(t, 60*time.Second, func() bool {
		var err error
		if list, err = run(t, bin, hubEnv, "nodes", "--data", hubData); err != nil {
			t.Fatalf("parley nodes: %s", list)
		}
		return onlineRow.MatchString(list)
	}, "the node one protocol ahead is not online:\n%s\nits log:\n%s",
		testkit.Later(func() any { return list }), testkit.Later(func() any { return laptop.log.String() }))
	waitLog(t, hub, "hub", "node laptop speaks cluster protocol "+strconv.Itoa(p+1)+" (parley v0.9.0) and this hub "+strconv.Itoa(p))
	if strings.Contains(laptop.log.String(), "link refused") {
		t.Fatalf("the node one protocol ahead refused the hub:\n%s", laptop.log.String())
	}

	// Two ahead: its join is refused, the token kept.
	deskEnv, deskData := machineEnv(t), filepath.Join(t.TempDir(), "desk")
	tok := joinToken(t, bin, hubEnv, hubData, "desk")
	out, err := run(t, far, deskEnv, "join", tok, "--data", deskData)
	if err == nil || !strings.Contains(out, "the hub refused to join") ||
		!strings.Contains(out, "node desk "+strconv.Itoa(p+2)+" (parley v0.10.0)") || !strings.Contains(out, "upgrade the hub") {
		t.Fatalf("parley join from a build two protocols ahead: %s %v, want refused with the reason", out, err)
	}
	// Joined by the hub's own build, then served by the one two ahead (a
	// machine upgraded past its hub): refused at both ends, with the reason.
	if out, err := run(t, bin, deskEnv, "join", tok, "--data", deskData); err != nil {
		t.Fatalf("parley join with the token the refused join kept: %s", out)
	}
	desk := startServe(t, far, deskEnv, "--data", deskData)
	why := regexp.MustCompile(`link refused: the hub speaks cluster protocol ` + strconv.Itoa(p) + `( \(parley [^)]+\))? and node desk ` +
		strconv.Itoa(p+2) + ` \(parley v0\.10\.0\).*upgrade the hub`)
	for _, side := range []struct {
		who string
		p   *daemonProc
	}{{"hub", hub}, {"node", desk}} {
		testkit.Eventually(t, 60*time.Second, func() bool { return why.MatchString(side.p.log.String()) },
			"the %s's log never said %s:\n%s", side.who, why, testkit.Later(func() any { return side.p.log.String() }))
	}
	list, err = run(t, bin, hubEnv, "nodes", "--data", hubData)
	if err != nil || regexp.MustCompile(`(?m)^desk\s+online`).MatchString(list) {
		t.Fatalf("the refused node is listed online: %s %v", list, err)
	}
}
