// Package agents is the registry of the agents knotd runs: each agent's
// home is a folder below this one (its preset, output decoder, fixtures,
// tests and test support), and this file lists them, one line each.
package agents

import (
	"errors"
	"fmt"

	"github.com/knotd/knotd/internal/agents/acp"
	"github.com/knotd/knotd/internal/agents/claude"
	"github.com/knotd/knotd/internal/agents/claudeacp"
	"github.com/knotd/knotd/internal/agents/codex"
	"github.com/knotd/knotd/internal/agents/codexacp"
	"github.com/knotd/knotd/internal/agents/gemini"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/agents/llm"
	"github.com/knotd/knotd/internal/agents/ollama"
	"github.com/knotd/knotd/internal/agents/opencode"
	"github.com/knotd/knotd/internal/transcript"
)

// entry is one agent of the registry.
type entry struct {
	name    string         // the preset's name in the configuration ("" for none)
	formats []kit.Decoding // the output formats its decoder reads
	driver  kit.Driver     // nil for a generic command and an agent the ACP driver runs
	// acp is the preset of an agent the ACP driver runs (driver nil).
	acp *kit.ACPPreset
}

// registry lists every agent, one line each.
var registry = []entry{
	{"", []kit.Decoding{{Format: kit.FormatText}}, nil, nil}, // a generic command, llm, ollama
	{"claude", claude.Formats, claude.Driver{}, nil},
	{"codex", codex.Formats, codex.Driver{}, nil},
	{"gemini", gemini.Formats, nil, gemini.Preset},
	{"llm", nil, llm.Driver{}, nil},
	{"ollama", nil, ollama.Driver{}, nil},
	{"", acp.Formats, nil, nil}, // the generic ACP agent (protocol: acp)
	{"claude-acp", nil, nil, claudeacp.Preset},
	{"codex-acp", nil, nil, codexacp.Preset},
	{"opencode", nil, nil, opencode.Preset},
}

// Driver returns the driver of the preset named name, nil when no agent of
// the registry has that name or the ACP driver runs it (ACPPresets).
func Driver(name string) kit.Driver {
	for _, e := range registry {
		if e.name == name && name != "" {
			return e.driver
		}
	}
	return nil
}

// ACPPresets returns the presets of the agents the ACP driver runs, by
// name.
func ACPPresets() map[string]*kit.ACPPreset {
	out := map[string]*kit.ACPPreset{}
	for _, e := range registry {
		if e.acp != nil {
			out[e.name] = e.acp
		}
	}
	return out
}

// ErrUnknownFormat is returned by NewDecoder and Decode for a format no
// agent reads.
var ErrUnknownFormat = errors.New("agents: unknown output format")

// Formats lists every output format an agent of the registry reads.
func Formats() []transcript.Format {
	var out []transcript.Format
	for _, e := range registry {
		for _, d := range e.formats {
			out = append(out, d.Format)
		}
	}
	return out
}

func decoding(format transcript.Format) (kit.Decoding, error) {
	for _, e := range registry {
		for _, d := range e.formats {
			if d.Format == format {
				return d, nil
			}
		}
	}
	return kit.Decoding{}, fmt.Errorf("%w %q", ErrUnknownFormat, format)
}

func normalizer(d kit.Decoding) kit.Normalizer {
	if d.New == nil {
		return nil
	}
	return d.New()
}

// NewDecoder returns a decoder for format. The only error is
// ErrUnknownFormat.
func NewDecoder(format transcript.Format) (*kit.Decoder, error) {
	d, err := decoding(format)
	if err != nil {
		return nil, err
	}
	return kit.NewDecoder(format, normalizer(d)), nil
}

// Decode reads a whole output in format (see kit.Decode). The only error
// is ErrUnknownFormat.
func Decode(format transcript.Format, output []byte) (kit.Decoded, error) {
	d, err := decoding(format)
	if err != nil {
		return kit.Decoded{}, err
	}
	return kit.Decode(format, normalizer(d), output), nil
}
