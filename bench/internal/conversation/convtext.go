package conversation

import (
	"fmt"
	"strings"
)

// The conversation scenario's texts: a realistic meeting note of about
// 6.3 KB (the size of the one issue 24 measured), the line each save
// appends to it, and the agent's reply of about 1.6 KB, which the API
// stand-ins answer every turn with.

// meetingNote is the note of the conversation scenario's vault.
const meetingNote = `---
title: Platform sync, week 47
date: 2026-11-20
attendees: [Maya Okafor, Jonas Berg, Priya Natarajan, Leo Marchetti, Sun-hee Park]
tags: [meeting, platform, q4]
---

# Platform sync, week 47

Facilitator: Maya. Notes: Jonas. Started 10:02, ended 11:05. Sun-hee joined at
10:20 from the airport; Leo left at 10:50 for the vendor call.

## Agenda

1. Release 4.12: status of the blockers and the go/no-go date
2. Storage migration: the second wave and what the first one taught us
3. On-call: the pager load since the alerting changes
4. Hiring: the two open backend roles
5. Budget: the cloud bill for October and the forecast for Q1
6. Anything else

## 1. Release 4.12

Priya walked through the release board. Of the eleven blockers open last week,
seven are closed, two are in review and two are still open:

- The session store leaks a file descriptor per reconnect when TLS
  renegotiation fails. Reproduced on staging with the soak test; the fix is a
  one-line close in the error path, but the test that proves it needs the fault
  injector, which only runs on the old CI runners.
- The export job times out for tenants with more than 40,000 projects. Jonas
  thinks the query planner picks the wrong index after the statistics refresh;
  Priya thinks it is the page size. Both will be tried on a copy of the largest
  tenant before Wednesday.

The two in review are the date picker's locale bug (waiting on design) and the
rate limiter's off-by-one at the minute boundary (waiting on a second reviewer).

Decision: go/no-go moves from Tuesday to Thursday. If the export timeout is not
understood by Wednesday evening, it ships behind the existing feature flag and
the release notes say so. Maya to tell support today so that they can warn the
three tenants who asked.

## 2. Storage migration

The first wave moved 1,200 databases in nine nights with two incidents. Leo's
summary of what went wrong:

- The throttle was per host, not per volume, so two large databases on one
  volume saturated it and the replica lag reached eleven minutes. The runbook
  now throttles per volume and checks the lag before each copy.
- The verification step compared row counts only. One table with a trigger
  that rewrites rows on insert passed the check with different contents.
  Verification now compares a checksum per 10,000-row chunk as well.

The second wave is 3,400 databases, including the four largest tenants. Leo
proposes fourteen nights instead of nine, starting the Monday after the
release, with the four largest on weekend nights only. Sun-hee asked whether
the rollback has been rehearsed since the runbook changed; it has not. Agreed
to rehearse it on staging before the second wave starts, with a restore from
the new snapshot format, timed end to end.

Open question: do we keep the old cluster for thirty days after the last
database moves, as planned, or cut it to two weeks to save about 9,000 a month?
Maya wants the thirty days until the checksum verification has run on every
database at least twice. Left open until the budget item.

## 3. On-call

Pages since the alerting changes on the 3rd: 41, down from 118 in the same
period last month. Of the 41, 29 were actionable, 8 were the disk alert on the
build cache (which should page the build team, not us) and 4 were duplicates
from the two regions alerting on the same upstream outage.

Sun-hee will move the build cache alert to the build team's rotation and add a
group key to the upstream alerts so that one outage pages once. Priya raised
that the night pages fall on the same two people because of time zones; the
rotation will be rebuilt so that nobody carries more than one night week in
six. Jonas volunteered to take two of Priya's night weeks in December.

## 4. Hiring

Two backend roles open. Eighteen applications since the posting went up, five
phone screens done, two on-site loops scheduled for next week (Tuesday and
Friday). The take-home is now optional: candidates may instead walk us through
code they wrote, which three of the five preferred. Leo and Jonas are on both
loops; Maya is the hiring manager for both roles.

The recruiter asked whether we could consider candidates in the Lisbon time
zone. Agreed yes for one of the two roles, provided the overlap with the on-call
rotation works out (see item 3).

## 5. Budget

October's cloud bill came in 6% over the forecast, almost all of it egress from
the migration's cross-region copies, which were expected but forecast for
November. Compute was 3% under. The Q1 forecast assumes the old storage cluster
is gone by mid-January; keeping it thirty days after the second wave moves that
to the end of February and adds about 13,500 to the quarter.

Decision: keep the thirty days. The checksum verification is the reason the
second wave can be trusted, and two weeks would not cover two full passes over
the largest tenants. Maya to update the forecast and tell finance.

## 6. Anything else

- The staging environment has been down twice this week because of the
  certificate renewal job; Sun-hee will pin the job's version until the vendor
  fixes the renewal race.
- Jonas asked for a shared glossary of the migration terms, since support and
  sales use "wave", "batch" and "window" for different things. Priya will start
  one in the wiki.
- Next sync moves to Thursday because of the release.
- Leo flagged that the vendor's support contract for the old cluster ends on
  January 31st. Extending it month by month costs about 2,000 a month, which
  is already in the forecast above; Maya will confirm with procurement that a
  monthly extension is possible at all before finance signs off the thirty days.

## Action items

- [ ] Maya: tell support about the go/no-go move and the three tenants (today)
- [ ] Jonas and Priya: try the index and the page size on the largest tenant's copy (Wednesday)
- [ ] Leo: rehearse the rollback on staging with the new snapshot format, timed
- [ ] Sun-hee: move the build cache alert to the build team; group the upstream alerts
- [ ] Priya: rebuild the night rotation, one night week in six at most
- [ ] Maya: update the Q1 forecast with the thirty days and tell finance
- [ ] Sun-hee: pin the certificate renewal job's version
- [ ] Priya: start the migration glossary in the wiki
- [x] Jonas: send these notes to the team

## Follow-ups
`

// followUpLine is the line the save of the given turn (2, 3, …) appends
// to the note: one action item, about 90 characters.
func followUpLine(turn int) string {
	who := []string{"Maya", "Jonas", "Priya", "Leo", "Sun-hee"}
	what := []string{
		"check the replica lag dashboard after the night's copies",
		"confirm the on-site loop times with the recruiter",
		"review the export job's query plan on the tenant copy",
		"ask finance about the egress line in the October bill",
		"write down the rollback rehearsal's timings in the runbook",
		"answer support's question about the feature flag",
		"add the checksum job's results to the migration board",
	}
	return fmt.Sprintf("- [ ] %s: %s (follow-up %d)\n", who[turn%len(who)], what[turn%len(what)], turn-1)
}

// agentReply is the agent's reply in the given turn (1, 2, …): a review
// of the note of about 1.6 KB, like the replies issue 24 measured with.
func agentReply(turn int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Review of the platform sync notes (turn %d).\n\n", turn)
	b.WriteString(`**What changed.** The follow-ups list has grown by one item since the last
version; the rest of the note reads as before. The new item has an owner and a
concrete action, which is what the list needs, but no date: add one, or say
that it waits for the release.

**Open points the notes leave open.**

- The export timeout has two competing explanations (index choice after the
  statistics refresh, or the page size) and one deadline. Say who decides on
  Wednesday evening whether it ships behind the flag, so that nobody waits for
  a meeting that is not scheduled.
- The storage migration's second wave depends on the rollback rehearsal, but
  the action item has no date. The wave starts the Monday after the release:
  the rehearsal should be done before Thursday's go/no-go at the latest.
- Keeping the old cluster for thirty days adds about 13,500 to Q1. The
  decision is recorded; the forecast update is an action item for Maya. Worth
  noting the date finance needs it by.

**Consistency.** Item 3 says nobody should carry more than one night week in
six, and Jonas takes two of Priya's night weeks in December: check that this
does not give Jonas two in six. The hiring item mentions the Lisbon time zone
for one role "provided the overlap with the on-call rotation works out";
link that to the rotation action item so the two are decided together.

**Suggested next step.** Before Thursday, turn the open question about the
old cluster's retention into a closed decision in the notes (it was decided
under item 5 but item 2 still reads as open).
`)
	return b.String()
}
