package router

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/uploads"
)

// A message's files are saved in the thread's working directory and the
// agent gets their paths in the text; the log's user_message says so too.
func TestFilesAreSavedAndNamedByPath(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		m := Message{MessageID: "m1", Text: "read these", Files: []uploads.File{
			{Name: "../notes.txt", Data: []byte("milk")}, {Name: "dot.png", MIMEType: "image/png", Data: []byte("png")},
		}}
		_, th, err := g.r.Send(context.Background(), SendRequest{From: g.from, Message: m})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got, err := os.ReadFile(filepath.Join(g.dir, uploads.Dir, "notes.txt")); err != nil || string(got) != "milk" {
			t.Errorf("saved notes.txt: %q, %v; want its bytes in the thread's directory", got, err)
		}
		ps := g.drv.Prompts()
		if len(ps) != 1 || !strings.Contains(ps[0].Text, uploads.Dir+"/notes.txt") || !strings.Contains(ps[0].Text, uploads.Dir+"/dot.png") {
			t.Fatalf("the agent got %+v, want one prompt naming both saved files", ps)
		}
		evs, _ := g.st.Events(context.Background(), th, 0, 100)
		var um chat.UserMessage
		for _, ev := range evs {
			if ev.Type == chat.TypeUserMessage {
				ev.Decode(&um)
			}
		}
		if len(um.Files) != 2 || um.Files[0].Path != uploads.Dir+"/notes.txt" || um.Text != ps[0].Text {
			t.Errorf("user_message %+v, want the two files and the text the agent got", um)
		}
	})
}

// An image goes to the agent with the type its bytes say, not the one the
// client declared (a browser takes it from the name: a JPEG named shot.png
// would be refused by the model's API and break the session's later turns);
// a file named .png that is no image is saved and named, not sent as one.
func TestImagesGoWithTheTypeTheirBytesSay(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
		gif := []byte("GIF89a\x01\x00\x01\x00")
		m := Message{MessageID: "m1", Text: "look",
			Images: []Image{{MIMEType: "image/png", Data: gif}},
			Files: []uploads.File{
				{Name: "shot.png", MIMEType: "image/png", Data: jpeg},
				{Name: "fake.png", MIMEType: "image/png", Data: []byte("plain words")},
			}}
		if _, _, err := g.r.Send(context.Background(), SendRequest{From: g.from, Message: m}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ps := g.drv.Prompts()
		if len(ps) != 1 || strings.Join(ps[0].Images, ",") != "image/gif,image/jpeg" {
			t.Fatalf("the agent got %+v, want the gif and the jpeg with their own types, the words file not as an image", ps)
		}
		if !strings.Contains(ps[0].Text, uploads.Dir+"/fake.png") {
			t.Errorf("the non-image .png is not named by path: %q", ps[0].Text)
		}
	})
}

// Files that cannot be saved refuse the message, with the reason; nothing
// of it is logged.
func TestFilesThatCannotBeSavedRefuseTheMessage(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		// Something else holds the uploads folder's name.
		if err := os.WriteFile(filepath.Join(g.dir, uploads.Dir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		m := Message{MessageID: "m1", Text: "read this", Files: []uploads.File{{Name: "a.txt", Data: []byte("a")}}}
		_, _, err := g.r.Send(context.Background(), SendRequest{From: g.from, Message: m})
		if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "could not be saved") {
			t.Fatalf("got %v, want a refusal saying the files could not be saved", err)
		}
		synctest.Wait()
		if ps := g.drv.Prompts(); len(ps) != 0 {
			t.Errorf("the agent got %+v, want nothing", ps)
		}
		many := Message{MessageID: "m2", Text: "x", Files: make([]uploads.File, uploads.MaxFiles+1)}
		for i := range many.Files {
			many.Files[i] = uploads.File{Name: "f", Data: []byte("f")}
		}
		if _, _, err := g.r.Send(context.Background(), SendRequest{From: g.from, Message: many}); !errors.Is(err, chat.ErrBadInput) {
			t.Errorf("%d files: got %v, want a refusal", len(many.Files), err)
		}
	})
}
