package tieoff

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestFailure_Body(t *testing.T) {
	tests := []struct {
		name string
		f    Failure
		want string
	}{
		{
			name: "exit status and stderr",
			f:    Failure{What: "agent claude exited with status 2", ExitStatus: 2, Duration: 1500 * time.Millisecond, Stderr: "error: no API key\nsee --help\n"},
			want: "**Run failed:** agent claude exited with status 2\n\n- Exit status: 2\n- Duration: 1.5s\n\n" +
				"Stderr (2 lines):\n\n```\nerror: no API key\nsee --help\n```\n",
		},
		{
			name: "killed, nothing on stderr",
			f:    Failure{What: "agent timed\nout", ExitStatus: NoExitStatus, Duration: 10 * time.Minute},
			want: "**Run failed:** agent timed out\n\n- Exit status: none (the agent did not exit by itself)\n- Duration: 10m0s\n\nNothing on stderr.\n",
		},
		{
			name: "never started",
			f:    Failure{What: "agent x could not be started: exec: \"nosuch\": executable file not found in $PATH", ExitStatus: NoExitStatus, NotStarted: true},
			want: "**Run failed:** agent x could not be started: exec: \"nosuch\": executable file not found in $PATH\n\n- Exit status: none (the agent could not be started)\n- Duration: 0s\n\nNothing on stderr.\n",
		},
		{
			name: "zero value still says something",
			f:    Failure{},
			want: "**Run failed:** the agent run failed\n\n- Exit status: 0\n- Duration: 0s\n\nNothing on stderr.\n",
		},
		{
			name: "terminal noise",
			f:    Failure{What: "x", ExitStatus: 1, Duration: 2 * time.Millisecond, Stderr: "\x1b[1;31mred\x1b[0m\r\nprogress 10%\rprogress 100%\n\x1b]0;title\x07bell\x07 nul\x00 bad\xff\n"},
			want: "**Run failed:** x\n\n- Exit status: 1\n- Duration: 2ms\n\n" +
				"Stderr (3 lines):\n\n```\nred\nprogress 100%\nbell nul bad\uFFFD\n```\n",
		},
		{
			name: "backticks in stderr get a longer fence",
			f:    Failure{What: "x", ExitStatus: 1, Stderr: "````\n"},
			want: "**Run failed:** x\n\n- Exit status: 1\n- Duration: 0s\n\nStderr (1 line):\n\n`````\n````\n`````\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Body(); got != tt.want {
				t.Errorf("Body() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestFailure_StderrIsBounded(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	body := Failure{What: "x", ExitStatus: 1, Stderr: strings.Join(lines, "\n")}.Body()
	if !strings.Contains(body, "Last 20 lines of stderr (80 earlier left out)") || !strings.Contains(body, "line 99\n") || strings.Contains(body, "line 79\n") {
		t.Errorf("Body() with 100 lines = %q", body)
	}
	huge := strings.Repeat("é", maxStderrBytes) // 2 bytes each
	body = Failure{What: "x", ExitStatus: 1, Stderr: "first\n" + huge}.Body()
	if len(body) > maxStderrBytes+300 || !utf8.ValidString(body) || strings.Contains(body, "first") {
		t.Errorf("Body() with a huge last line: %d bytes, valid UTF-8 %v", len(body), utf8.ValidString(body))
	}
	wide := strings.Repeat(strings.Repeat("w", 300)+"\n", 15)
	body = Failure{What: "x", ExitStatus: 1, Stderr: wide}.Body()
	if n := strings.Count(body, strings.Repeat("w", 300)); n*301 > maxStderrBytes || n == 0 {
		t.Errorf("Body() kept %d lines of 301 bytes; budget %d", n, maxStderrBytes)
	}
}
