package agentrun

import "context"

// FileSystem is the file system knotd offers an ACP agent (fs/read_text_file,
// fs/write_text_file). Paths are absolute, as ACP sends them. Errors say why a
// call was refused; they go back to the agent as the call's error.
type FileSystem interface {
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
	// MayEdit is consulted before knotd grants an agent's request for
	// permission to edit (or delete, or move) the files at paths, which the
	// agent may then write with its own tools, past the file system: it
	// says why the edit would lose a save of the user's (or is refused as a
	// write through the file system is), nil when knotd may grant it.
	MayEdit(ctx context.Context, paths []string) error
}
