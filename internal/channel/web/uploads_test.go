package web

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/uploads"
)

// A thread's uploaded image is served from its folder; a machine's thread
// (id@node, listed at a hub) is not, even when this machine has a file at the
// same path: that would show a different picture than the one sent.
func TestUploadedImagesAreServedOnlyForThisMachinesThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	work := t.TempDir()
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, uploads.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, uploads.Dir, "shot.png"), pic.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, id := range []string{"t_here", "t_there@b"} {
		th := &chat.Thread{ID: chat.ThreadID(id), Agent: "claude", Cwd: work, State: chat.ThreadIdle, CreatedAt: now, UpdatedAt: now}
		if err := st.Commit(ctx, store.Batch{Thread: th}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(nil, st, nil, Options{Token: testToken}))
	t.Cleanup(srv.Close)
	get := func(id string) (int, []byte) {
		r, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/threads/"+id+"/uploads/shot.png", nil)
		r.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	if code, body := get("t_here"); code != http.StatusOK || !bytes.Equal(body, pic.Bytes()) {
		t.Fatalf("this machine's thread's image: %d, %d bytes; want 200 and the picture", code, len(body))
	}
	if code, _ := get("t_there@b"); code != http.StatusNotFound {
		t.Fatalf("machine b's thread's image served from this machine's disk: %d, want 404", code)
	}
}
