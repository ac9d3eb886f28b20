package knotdlog

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestLogBook_ParsesLinesAcrossWrites(t *testing.T) {
	b := NewBook()
	b.Write([]byte(`{"time":"2026-01-02T03:04:05.000000001Z","level":"INFO","msg":"run started","strand":"a.md","run":"r1"}` + "\nnot json\n{\"msg\":\"run fin"))
	b.Write([]byte(`ished","strand":"a.md"}` + "\n"))
	ls := b.Snapshot()
	if len(ls) != 2 || ls[0].Strand != "a.md" || ls[0].Time.Nanosecond() != 1 || ls[1].Msg != MsgRunFinished {
		t.Fatalf("snapshot() = %+v; want run started and run finished of a.md", ls)
	}
	if n := b.Count("run "); n != 2 {
		t.Errorf(`count("run ") = %d; want 2`, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { b.Write([]byte(`{"msg":"watcher: watching","took":5}` + "\n")) })
	err := b.Wait(ctx, HasMsg(MsgWatching))
	wg.Wait()
	if err != nil {
		t.Fatalf("wait(watching) = %v", err)
	}
	if l, ok := Find(b.Snapshot(), MsgWatching); !ok || l.Took != 5 {
		t.Errorf("find(watching) = %+v, %v; want took 5", l, ok)
	}
}
