package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"
)

// Questions (permissions: ask). A call an agent's run held for the user is
// a question: a section of the note's tie-off (its own run id, the marker
// fields question= and call=) and a record in the state (state.Question),
// which the tie-off rebuilds when the state has none. An answer (the
// note's knot_answer, knotd approve|deny|withdraw, the console) is
// recorded in the state first, then written as a section of its own, and
// then (approve, deny) the note runs again through the scheduler, as any
// change (pause, budgets and breakers apply): the run that continues the
// asking turn (agentrun.Request.Continuing). Everything that writes a
// note's tie-off holds the note's claim, as the pipeline does: an answer
// given while the note is worked on is written by the pipeline as it
// takes the note up next (QuestionsBefore).

// Question is a question waiting for the user's answer.
type Question struct {
	// ID is the question's id (8 hex digits); Strand the vault-relative,
	// slash-separated path of the note.
	ID, Strand string
	// Call is the held call.
	Call question.Call
	// Agent is the name of the agent that asked.
	Agent string
	// RunID is the run that asked.
	RunID string
	// Asked is when it asked.
	Asked time.Time
}

var (
	// ErrNoQuestion is the error for an unknown id, or one answered
	// already.
	ErrNoQuestion = errors.New("vault: no such question")
	// ErrAnswersFromMachine refuses an answer from a note where the
	// configuration takes answers only from the machine (answers_from:
	// machine).
	ErrAnswersFromMachine = errors.New("vault: this vault takes answers only from knotd approve|deny and the console (answers_from: machine), not from notes")
)

// questionsOf are the vault's questions that runs wait on now (an ACP
// agent's request for permission): each waiter's channel, by question id.
type questionsOf struct {
	mu      sync.Mutex
	waiters map[string]chan question.Answer
	// any is set once a run waited: until then no change of a note
	// looks for waiters.
	any atomic.Bool
}

// Questions returns the questions waiting for an answer, oldest first.
func (v *Vault) Questions() ([]Question, error) {
	qs, err := v.store.Questions()
	if err != nil {
		return nil, err
	}
	var out []Question
	for _, q := range qs {
		if q.Waiting() {
			out = append(out, publicQuestion(q))
		}
	}
	return out, nil
}

func publicQuestion(q state.Question) Question {
	return Question{ID: q.ID, Strand: q.Strand, Call: q.Call, Agent: q.Agent, RunID: q.RunID, Asked: q.Asked}
}

// AnswerQuestion answers the waiting question id: it records the answer,
// writes its section into the note's tie-off (at once if the note is not
// being worked on, else as the pipeline takes it up next) and, for approve
// and deny, has the note run again to continue the asking turn (at once
// in the daemon, else at the next pass). A run waiting for the answer
// (an ACP agent) gets it at once. An unknown id, or one answered already,
// is ErrNoQuestion; FromNote where answers_from is machine is
// ErrAnswersFromMachine.
func (v *Vault) AnswerQuestion(id string, verdict question.Verdict, why string, from question.Source) (Question, error) {
	return v.answer("", id, verdict, why, from, false)
}

// answer is AnswerQuestion; a rel other than "" answers only a question
// of that note, and held says the caller works on that note (the
// pipeline): it writes the section and continues the turn itself.
func (v *Vault) answer(rel, id string, verdict question.Verdict, why string, from question.Source, held bool) (Question, error) {
	switch verdict {
	case question.Approve, question.Deny, question.Withdraw:
	default:
		return Question{}, fmt.Errorf("vault: %q is not approve, deny or withdraw", verdict)
	}
	if from == question.FromNote && v.config().AnswersFrom == config.AnswersMachine {
		return Question{}, ErrAnswersFromMachine
	}
	if v.dry {
		return Question{}, errors.New("vault: a dry run answers no question")
	}
	why = boundWhy(why)
	var q state.Question
	if !held {
		// Answered on another device meanwhile (its answer section came
		// with the tie-off): that device continues the turn, not this one.
		var known bool
		err := v.store.View(func(tx *state.Tx) (err error) {
			q, known, err = tx.QuestionOf(id)
			return err
		})
		if err != nil {
			return Question{}, err
		}
		if known && q.Waiting() && !v.waitedOn(id) {
			if err := v.answeredElsewhere(q.Strand, []state.Question{q}); err != nil {
				return Question{}, err
			}
		}
	}
	err := v.store.Update(func(tx *state.Tx) error {
		var ok bool
		var err error
		if q, ok, err = tx.QuestionOf(id); err != nil {
			return err
		}
		if !ok || !q.Waiting() || (rel != "" && q.Strand != rel) {
			return ErrNoQuestion
		}
		q.Answer = &question.Answer{ID: id, CallHash: q.CallHash, Verdict: verdict, Why: why, From: from, At: v.now().UTC()}
		return tx.PutQuestion(q)
	})
	if err != nil {
		return Question{}, err
	}
	v.log.Info("question answered", "strand", q.Strand, "question", id, "answer", q.Answer.String())
	if v.deliver(q) || held {
		return publicQuestion(q), nil
	}
	if v.claims.tryClaim(q.Strand) {
		err = v.writeAnswers(q.Strand)
		v.claims.release(q.Strand)
		if err != nil {
			// Recorded: the section is written when the note is taken
			// up next.
			v.log.Warn("cannot write the answer into the note's tie-off yet; knotd writes it when it next takes the note up", "strand", q.Strand, "question", id, "err", err)
		}
	}
	if verdict != question.Withdraw || err != nil {
		if s := v.live.Load(); s != nil {
			s.Submit(q.Strand, Job{FiredBy: agentrun.FiredByAnswer})
		}
	}
	return publicQuestion(q), nil
}

// boundWhy bounds an answer's reason to one line of maxWhy bytes.
func boundWhy(why string) string {
	why = strings.Join(strings.Fields(strings.ToValidUTF8(why, "\uFFFD")), " ")
	if len(why) <= question.MaxWhy {
		return why
	}
	cut := question.MaxWhy
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut] + "…"
}

// deliver hands q's answer to the run waiting for it, if one is; it
// reports whether one was.
func (v *Vault) deliver(q state.Question) bool {
	v.asks.mu.Lock()
	defer v.asks.mu.Unlock()
	ch, ok := v.asks.waiters[q.ID]
	if !ok {
		return false
	}
	delete(v.asks.waiters, q.ID)
	ch <- *q.Answer // buffered: one answer per waiter
	return true
}

// questionsOfStrand returns the recorded questions of rel.
func (v *Vault) questionsOfStrand(rel string) ([]state.Question, error) {
	all, err := v.store.Questions()
	if err != nil {
		return nil, err
	}
	var qs []state.Question
	for _, q := range all {
		if q.Strand == rel {
			qs = append(qs, q)
		}
	}
	return qs, nil
}

// writeAnswers writes the sections of rel's answers not yet in its
// tie-off, with rel claimed. A withdrawn question is then done; an
// approved or denied one waits for its continuing run.
func (v *Vault) writeAnswers(rel string) error {
	qs, err := v.questionsOfStrand(rel)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Answer == nil || q.Written {
			continue
		}
		if err := v.appendAnswer(q, answerNext(*q.Answer)); err != nil {
			return err
		}
		err := v.store.Update(func(tx *state.Tx) error {
			if q.Answer.Verdict == question.Withdraw {
				return tx.DeleteQuestion(q.ID)
			}
			q.Written = true
			return tx.PutQuestion(q)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// answerNext says what happens after answer a.
func answerNext(a question.Answer) string {
	switch {
	case a.Verdict == question.Approve:
		return "knotd continues the run."
	case a.Verdict == question.Deny:
		return "The agent is told."
	case a.From == question.FromKnotd:
		return "The note changed before anyone answered; the agent gets the change."
	}
	return "Nothing runs."
}

// appendAnswer appends the answer section of q (answered) to its tie-off.
func (v *Vault) appendAnswer(q state.Question, next string) error {
	a := *q.Answer
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("vault: new run id: %w", err)
	}
	sec := tieoff.Section{Event: q.Event, Strand: q.Strand, Time: v.now().UTC(), RunID: id.String(),
		Question: q.ID, Verdict: string(a.Verdict), Body: question.AnswerBody(a, q.Call, next)}
	return v.appendSection(q.Strand, sec)
}

// appendSection appends sec to rel's tie-off.
func (v *Vault) appendSection(rel string, sec tieoff.Section) error {
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return err
	}
	if !sec.Event.Valid() {
		sec.Event = strand.Modified
	}
	if _, err := tieoff.Append(v.fs, t, sec); err != nil {
		return fmt.Errorf("vault: %s: write tie-off: %w", rel, err)
	}
	return nil
}

// questionSection is the section of q, waiting.
func (v *Vault) questionSection(q state.Question) (tieoff.Section, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return tieoff.Section{}, fmt.Errorf("vault: new run id: %w", err)
	}
	// The marker records what the asking turn answered, as a run's does
	// (a turn that ended holding a call may have no section of its own).
	return tieoff.Section{Event: q.Event, Strand: q.Strand, Time: q.Asked, RunID: id.String(), Asked: true,
		Question: q.ID, Call: q.CallHash, Hash: q.Hash, Body: v.questionBody(q)}, nil
}

// ask writes down the question a run asks about call and records it; it
// returns the question (recorded and written, or found recorded: the
// same run asking the same call again).
func (v *Vault) ask(rel string, run pipeline.Asking, call question.Call) (state.Question, error) {
	if call.Kind == "" {
		// Told only the tool and its input (Claude Code's deferred
		// call): what it does, and the file it edits in the vault. The
		// hash is the same (tool and input).
		c := question.FromClaude(call.Tool, call.Input, v.root)
		c.ToolUseID, c.Why, c.Diff = call.ToolUseID, call.Why, call.Diff
		call = c
	}
	hash := call.Hash()
	q := state.Question{ID: question.NewID(run.RunID, hash), Strand: rel, Call: call, CallHash: hash, Agent: run.Agent,
		RunID: run.RunID, Resume: run.Resume, Event: run.Event, Hash: run.Hash, Asked: v.now().UTC()}
	if !q.Event.Valid() {
		q.Event = strand.Modified
	}
	var known bool
	err := v.store.View(func(tx *state.Tx) (err error) {
		_, known, err = tx.QuestionOf(q.ID)
		return err
	})
	if err != nil || known {
		return q, err
	}
	sec, err := v.questionSection(q)
	if err != nil {
		return q, err
	}
	if err := v.appendSection(rel, sec); err != nil {
		return q, err
	}
	if err := v.store.Update(func(tx *state.Tx) error { return tx.PutQuestion(q) }); err != nil {
		return q, err
	}
	v.tellQuestion(publicQuestion(q))
	return q, nil
}

// tellQuestion is called when a question starts waiting.
func (v *Vault) tellQuestion(q Question) {
	v.log.Info("a question waits for your answer", "strand", q.Strand, "question", q.ID, "agent", q.Agent,
		"what", callSummary(q.Call), "approve", "knotd approve "+q.ID)
}

// pipelineQuestions are the pipeline's questions hooks (pipeline.Questions).

func (h pipelineHost) QuestionsBefore(rel string) (*state.Question, error) {
	return h.v.questionsBefore(rel)
}

func (h pipelineHost) WithdrawQuestions(rel string) error {
	v := h.v
	qs, err := v.questionsOfStrand(rel)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if !q.Waiting() {
			continue
		}
		if _, err := v.answer(rel, q.ID, question.Withdraw, "", question.FromKnotd, true); err != nil && !errors.Is(err, ErrNoQuestion) {
			return err
		}
	}
	return v.writeAnswers(rel)
}

func (h pipelineHost) Asked(rel string, run pipeline.Asking, calls []question.Call) {
	v := h.v
	for _, c := range calls {
		if _, err := v.ask(rel, run, c); err != nil {
			v.log.Error("cannot write down the agent's question; it is not asked (the next change of the note runs as usual)", "strand", rel, "run", run.RunID, "err", err)
		}
	}
	if run.Resume == "" {
		return
	}
	// The run's questions asked while it ran continue its conversation
	// as it stands now.
	err := v.store.Update(func(tx *state.Tx) error {
		qs, err := tx.Questions()
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.RunID == run.RunID && q.Resume != run.Resume {
				q.Resume = run.Resume
				if err := tx.PutQuestion(q); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		v.log.Error("cannot record the conversation the note's questions continue", "strand", rel, "run", run.RunID, "err", err)
	}
}

func (h pipelineHost) AskFunc(rel string, run pipeline.Asking) func(context.Context, question.Call) (question.Answer, bool) {
	v := h.v
	return func(ctx context.Context, c question.Call) (question.Answer, bool) {
		q, err := v.ask(rel, run, c)
		if err != nil {
			v.log.Error("cannot write down the agent's question; the call is refused", "strand", rel, "run", run.RunID, "err", err)
			return question.Answer{}, false
		}
		ch := make(chan question.Answer, 1)
		v.asks.mu.Lock()
		if v.asks.waiters == nil {
			v.asks.waiters = map[string]chan question.Answer{}
		}
		v.asks.waiters[q.ID] = ch
		v.asks.any.Store(true)
		v.asks.mu.Unlock()
		var a question.Answer
		select {
		case a = <-ch:
		case <-ctx.Done():
			v.asks.mu.Lock()
			_, still := v.asks.waiters[q.ID]
			delete(v.asks.waiters, q.ID)
			v.asks.mu.Unlock()
			if still {
				// No answer in time: the question stays, and an answer
				// later continues the turn in a run of its own.
				return question.Answer{}, false
			}
			a = <-ch // answered as the wait ended: it is delivered
		}
		// The run holds the note: its answer is written now, and the
		// run itself goes on with it.
		q.Answer = &a
		if err := v.appendAnswer(q, answerInRun(a)); err != nil {
			v.log.Error("cannot write the answer into the note's tie-off", "strand", rel, "question", q.ID, "err", err)
		}
		if err := v.store.Update(func(tx *state.Tx) error { return tx.DeleteQuestion(q.ID) }); err != nil {
			v.log.Error("cannot record the answered question", "strand", rel, "question", q.ID, "err", err)
		}
		return a, true
	}
}

// answerInRun says what happens after an answer a run waited for.
func answerInRun(a question.Answer) string {
	switch a.Verdict {
	case question.Approve:
		return "The agent, which waited, goes on with it."
	case question.Deny:
		return "The agent, which waited, is told."
	}
	return "The agent, which waited, is told it may not."
}

func (h pipelineHost) Continued(id string) error {
	return h.v.store.Update(func(tx *state.Tx) error { return tx.DeleteQuestion(id) })
}

// questionsBefore is pipeline.Questions.QuestionsBefore.
func (v *Vault) questionsBefore(rel string) (*state.Question, error) {
	qs, err := v.questionsOfStrand(rel)
	if err != nil || len(qs) == 0 {
		return nil, err
	}
	waiting := 0
	for _, q := range qs {
		if q.Waiting() && !v.waitedOn(q.ID) {
			waiting++
		}
	}
	if waiting > 0 {
		if err := v.answeredElsewhere(rel, qs); err != nil {
			return nil, err
		}
		v.noteAnswers(rel, true)
	}
	if err := v.writeAnswers(rel); err != nil {
		return nil, err
	}
	if qs, err = v.questionsOfStrand(rel); err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.Answer != nil && q.Written && q.Answer.Verdict != question.Withdraw {
			return &q, nil
		}
	}
	return nil, nil
}

// hasWaiter reports whether a run of rel waits for an answer now.
func (v *Vault) hasWaiter(rel string) bool {
	if !v.asks.any.Load() {
		return false
	}
	qs, err := v.questionsOfStrand(rel)
	if err != nil {
		return false
	}
	for _, q := range qs {
		if v.waitedOn(q.ID) {
			return true
		}
	}
	return false
}

// waitedOn reports whether a run waits for question id's answer now.
func (v *Vault) waitedOn(id string) bool {
	v.asks.mu.Lock()
	defer v.asks.mu.Unlock()
	_, ok := v.asks.waiters[id]
	return ok
}

// tieOffQuestionSections bounds how many of a tie-off's newest sections
// are read for its questions and answers; tieOffQuestionBytes how much.
const (
	tieOffQuestionSections = 64
	tieOffQuestionBytes    = 1 << 20
)

// answeredElsewhere forgets the waiting questions of rel that its tie-off
// shows answered: by another device (a synced tie-off), or by hand. The
// device that answered continues the turn; this one does not (it would
// run it twice).
func (v *Vault) answeredElsewhere(rel string, qs []state.Question) error {
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return err
	}
	w, err := tieoff.Tail(v.fs, t, tieOffQuestionSections, tieOffQuestionBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		v.log.Warn("cannot read the note's tie-off for answers given elsewhere", "strand", rel, "err", err)
		return nil
	}
	answered := map[string]string{}
	for _, s := range w.Sections {
		if s.Verdict != "" && s.Question != "" {
			answered[s.Question] = s.Verdict
		}
	}
	for _, q := range qs {
		verdict, ok := answered[q.ID]
		if !q.Waiting() || !ok || v.waitedOn(q.ID) {
			continue
		}
		v.log.Info("a question was answered elsewhere (another device, or by hand in the tie-off); the turn is continued where it was answered, not here",
			"strand", rel, "question", q.ID, "verdict", verdict)
		if err := v.store.Update(func(tx *state.Tx) error { return tx.DeleteQuestion(q.ID) }); err != nil {
			return err
		}
	}
	return nil
}

// noteAnswers applies the answers in rel's knot_answer to rel's waiting
// questions. Anything else it names (an unknown id, another note's
// question, one answered already) is ignored, and said once.
func (v *Vault) noteAnswers(rel string, held bool) {
	content, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil || tooBig {
		return // the note's run says what is wrong with it
	}
	answers, problems := parseNoteAnswers(content)
	for _, p := range problems {
		v.noticeOnce("answer\x00"+rel+"\x00"+p, func() {
			v.log.Warn("an answer in the note cannot be read; it is ignored", "strand", rel, "problem", p)
		})
	}
	if len(answers) > 0 && v.config().AnswersFrom == config.AnswersMachine {
		v.noticeOnce("answers-from-machine\x00"+rel, func() {
			v.log.Warn("the note answers a question in knot_answer, but this vault takes answers only from the machine (answers_from: machine): use knotd approve|deny", "strand", rel)
		})
		return
	}
	for _, a := range answers {
		_, err := v.answer(rel, a.ID, a.Verdict, a.Why, question.FromNote, held)
		switch {
		case errors.Is(err, ErrNoQuestion):
			v.noticeOnce("answer\x00"+rel+"\x00"+a.ID+"\x00"+string(a.Verdict), func() {
				v.log.Info("the note's knot_answer names no question of this note that waits (an unknown id, another note's question, or one answered already); it is ignored",
					"strand", rel, "question", a.ID)
			})
		case err != nil:
			v.log.Warn("cannot apply the note's answer", "strand", rel, "question", a.ID, "err", err)
		}
	}
}

// answeredStrands are the notes whose answered questions wait for their
// section or their continuing run: an answer given while no daemon ran
// (knotd approve without one), or before knotd stopped.
func (v *Vault) answeredStrands() []string {
	qs, err := v.store.Questions()
	if err != nil {
		v.log.Warn("cannot read the questions from the state", "err", err)
		return nil
	}
	var rels []string
	seen := map[string]bool{}
	for _, q := range qs {
		if q.Answer != nil && !seen[q.Strand] {
			seen[q.Strand] = true
			rels = append(rels, q.Strand)
		}
	}
	return rels
}

// openQuestions reads the questions of rel's tie-off that wait for an
// answer (a question section with no later answer section of its id),
// among its newest sections: what the state rebuilds when it has none
// (first contact, a lost state, a new device). The tie-off keeps the
// call's hash, not the call: the rebuilt question binds an answer as the
// first did, and says what it asks in the section's words only.
func (v *Vault) openQuestions(rel string) []state.Question {
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return nil
	}
	w, err := tieoff.Tail(v.fs, t, tieOffQuestionSections, tieOffQuestionBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.log.Warn("cannot read the note's tie-off for its questions", "strand", rel, "err", err)
		}
		return nil
	}
	var qs []state.Question
	for _, s := range tieoff.OpenQuestions(w.Sections) {
		qs = append(qs, state.Question{ID: s.Question, Strand: rel, CallHash: s.Call, Event: s.Event, Asked: s.Time.UTC(),
			Call: question.Call{Tool: "(see the tie-off)", Kind: question.KindOther}, Written: false})
	}
	return qs
}

// rebuildQuestion records q, rebuilt from the tie-off, unless the state
// knows that id already.
func rebuildQuestion(tx *state.Tx, q state.Question) error {
	if _, known, err := tx.QuestionOf(q.ID); err != nil || known {
		return err
	}
	return tx.PutQuestion(q)
}
