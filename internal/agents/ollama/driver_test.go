package ollama_test

import (
	"slices"
	"testing"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/agents/ollama"
)

func TestDriver(t *testing.T) {
	d := ollama.Driver{}
	got, err := d.Argv(&kit.Attempt{Program: []string{"ollama"}, Model: "llama3.2", Resume: "ignored", Instructions: "ignored: inline"})
	if want := []string{"ollama", "run", "--hidethinking", "llama3.2"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("argv = %q, %v; want %q", got, err, want)
	}
	if d.Resumes() || !d.InlineInstructions() || d.Delivery() != kit.PromptStdin || d.DefaultProgram() != "ollama" {
		t.Errorf("ollama: resumes %v, inline instructions %v, delivery %q, program %q", d.Resumes(), d.InlineInstructions(), d.Delivery(), d.DefaultProgram())
	}
	if l := d.Limits(); l != (kit.Limits{TieOffSections: 10}) {
		t.Errorf("limits = %+v; want 10 tie-off sections, the rest default", l)
	}
}
