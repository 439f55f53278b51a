package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"
)

// The hub's store budget. JetStream books each stream's MaxBytes on the
// hub's disk when it makes the stream, out of its MaxStore (store_bytes, or
// 3/4 of the disk free at the hub's start), and refuses any stream made
// or updated while its bookings are past MaxStore, however small. At a
// restart it books the streams it finds on disk unchecked, so a hub started
// on a fuller disk, with a smaller store_bytes or a larger input_bytes could
// not even update its own buckets: no machine was reachable. So the hub
// keeps two numbers: its budget, which every new booking is checked against
// here, and JetStream's MaxStore, raised to what is already booked when that
// is more, so every machine joined keeps the inputs it was promised at its
// join. The hub works out the default budget itself, never leaving MaxStore
// to JetStream: JetStream's own ("dynamic") MaxStore cannot be raised by a
// reload.

// storeHeadroom is what the hub's JetStream may hold past its bookings: the
// buckets that book nothing (the directory's records, the used tokens)
// still write, and a bucket made anew books a byte.
const storeHeadroom = 16 << 20

// storeDir is where the hub's JetStream keeps its streams.
func storeDir(dataDir string) string { return filepath.Join(dataDir, "nats") }

// diskFree is the bytes free to an unprivileged user on the disk holding
// dir; a variable so that a test can make a disk fuller.
var diskFree = func(dir string) (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, err
	}
	return int64(uint64(fs.Bavail) * uint64(fs.Bsize)), nil
}

// startMaxStore is the JetStreamMaxStore the hub's server starts with:
// store_bytes, or as JetStream would make it, 3/4 of the disk free (at the
// store's directory, or the nearest one that exists before its first start).
func startMaxStore(opt HubOptions) (int64, error) {
	if opt.StoreBytes > 0 {
		return opt.StoreBytes, nil
	}
	dir := storeDir(opt.DataDir)
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, err := diskFree(dir)
	if err != nil {
		return 0, fmt.Errorf("cluster: the disk free for the hub's store: %w", err)
	}
	// At least a byte: 0 would leave JetStream to work it out (see above).
	return max(free/4*3, 1), nil
}

// keepBookings settles the budget and raises JetStream's MaxStore to what
// the streams found on disk book, when that is more. It runs in StartHub
// before anything else uses the server.
func (h *Hub) keepBookings() error {
	h.budget = h.storeMax
	if h.opt.StoreBytes <= 0 {
		// As JetStream does: what the store holds already counts as free, so
		// the budget does not shrink at each restart by the hub's own inputs.
		h.budget += int64(h.srv.GlobalAccount().JetStreamUsage().Store / 4 * 3)
	}
	booked := h.booked()
	want := max(h.budget, booked+storeHeadroom)
	if want <= h.storeMax {
		return nil
	}
	h.storeMax = want
	opts, err := h.serverOptions(h.reg)
	if err != nil {
		return err
	}
	if err := h.srv.ReloadOptions(opts); err != nil {
		return fmt.Errorf("cluster: keep the joined machines' bookings: %w", err)
	}
	if booked+storeHeadroom <= h.budget {
		return nil
	}
	h.log.Warn(fmt.Sprintf("cluster: the hub's disk bookings (%d MiB: the thread summaries' 256 MiB and %d machines' inputs and copies) "+
		"are past its budget (%d MiB: store_bytes, or 3/4 of the disk free at its start); the machines joined keep theirs, "+
		"and no machine can join until there is room: free disk on the hub, lower [cluster] input_bytes, or raise store_bytes, "+
		"and restart the hub", booked>>20, len(h.reg.Nodes), h.budget>>20),
		"booked_bytes", booked, "budget_bytes", h.budget)
	return nil
}

// booked is what the hub's JetStream has booked on its disk.
func (h *Hub) booked() int64 {
	_, store, err := h.srv.JetStreamReservedResources()
	if err != nil {
		return 0
	}
	return store
}

// StoreUse is the hub's disk bookings and its budget, in bytes.
func (h *Hub) StoreUse() (booked, budget int64) { return h.booked(), h.budget }

// inputBound is the bound node's input stream is made or updated with:
// input_bytes when the budget has room for it. A new node past the budget
// is refused; a joined one whose bound would grow past it keeps its bound.
// h.book must be held (joins, and the hub's start).
func (h *Hub) inputBound(ctx context.Context, node string) (int64, error) {
	bound, had, booked, err := h.bookable(ctx, InputStream(node), h.opt.InputBytes)
	switch {
	case err != nil:
		return 0, err
	case bound == 0:
		return 0, h.errNoRoom(booked)
	case bound == had && had < h.opt.InputBytes:
		h.log.Warn(fmt.Sprintf("cluster: node %s keeps its inputs' bound of %d MiB: [cluster] input_bytes (%d MiB) would book "+
			"past the hub's budget (%d MiB of %d MiB booked)", node, had>>20, h.opt.InputBytes>>20, booked>>20, h.budget>>20), "node", node)
	}
	return bound, nil
}

// bookable is the bound stream name may be made or updated with: want when
// the budget has room for it (or it books no more than the stream has), else
// the stream's present bound, had (0: no stream, none can be made). booked
// is what the hub has booked now. h.book must be held: bookings are checked
// and made one at a time.
func (h *Hub) bookable(ctx context.Context, name string, want int64) (bound, had, booked int64, err error) {
	s, err := h.js.Stream(ctx, name)
	switch {
	case err == nil:
		had = max(s.CachedInfo().Config.MaxBytes, 0)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, 0, 0, err
	}
	booked = h.booked()
	if want <= had || booked+want-had <= h.budget {
		return want, had, booked, nil
	}
	return had, had, booked, nil
}

// errNoRoom says in words why a node's input stream cannot be booked.
func (h *Hub) errNoRoom(booked int64) error {
	return fmt.Errorf("%w for another machine's inputs: each machine reserves [cluster] input_bytes "+
		"(%d MiB) of the hub's disk, and %d MiB of the hub's %d MiB (store_bytes, or 3/4 of the disk free at its start) "+
		"are reserved already; lower input_bytes in the hub's config, or free disk there, and restart the hub", ErrNoRoom,
		h.opt.InputBytes>>20, booked>>20, h.budget>>20)
}

// noRoom says in words what JetStream's "insufficient storage resources"
// means for a node's input stream.
func (h *Hub) noRoom(err error) error {
	var ae *jetstream.APIError
	if !errors.As(err, &ae) || ae.ErrorCode != jsStorageResourcesExceeded {
		return err
	}
	return h.errNoRoom(h.booked())
}

// ErrNoRoom says the hub cannot reserve another node's inputs on its disk.
var ErrNoRoom = errors.New("no room at the hub")

// jsStorageResourcesExceeded is JetStream's "insufficient storage resources
// available" (JSStorageResourcesExceededErr).
const jsStorageResourcesExceeded jetstream.ErrorCode = 10047
