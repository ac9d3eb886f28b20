package agentrun

import "context"

// FileSystem is the file system knotd offers an ACP agent (fs/read_text_file,
// fs/write_text_file). Paths are absolute, as ACP sends them. Errors say why a
// call was refused; they go back to the agent as the call's error.
type FileSystem interface {
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}
