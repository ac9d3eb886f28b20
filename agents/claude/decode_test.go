package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/agents/kit"
)

// BenchmarkDecode measures the Claude decoder on the stream-json
// fixture with tools.
func BenchmarkDecode(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "output", "stream-json-tools.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for range b.N {
		kit.Decode(FormatStreamJSON, newNormalizer(), in)
	}
}
