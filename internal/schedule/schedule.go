// Package schedule reads the schedules a note or a folder can carry
// (knot_schedule, a rule's schedule) and says when they fall due: every day
// at a time, on some days of the week, at an interval, or by a cron
// expression, in the user's time zone unless the schedule names one.
//
// A schedule is a pure function of time: Next gives the first occurrence
// after an instant, Missed the occurrences between two, so that every
// device that reads the same schedule computes the same occurrences, and
// an occurrence is named by its due time.
//
// Wall-clock schedules follow the zone's clock across daylight-saving
// changes, as cron does: a time the clock skips (02:30 on a spring-forward
// night) falls due at the first instant after the gap, and a time the clock
// shows twice (01:30 on a fall-back night) falls due once, the first time.
package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone names work where the system has no zone database (Windows)
)

// MaxLen bounds the text of a schedule.
const MaxLen = 200

// MinEvery and MaxEvery bound an interval schedule.
const (
	MinEvery = time.Minute
	MaxEvery = 31 * 24 * time.Hour
)

// ErrInvalid is wrapped by every error about a schedule's text.
var ErrInvalid = errors.New("schedule: invalid")

// Schedule is a parsed schedule. The zero value is no schedule.
type Schedule struct {
	text string
	loc  *time.Location
	// every is the interval of an interval schedule, 0 for a calendar one.
	every time.Duration
	// The calendar: bit i set when value i matches.
	minute, hour uint64
	dom          uint64 // bits 1..31
	month        uint64 // bits 1..12
	dow          uint64 // bits 0..6, Sunday = 0
	// domStar and dowStar record an unrestricted field, for cron's rule
	// that a restricted day of month and day of week match either.
	domStar, dowStar bool
}

// String returns the schedule's text as it was given.
func (s Schedule) String() string { return s.text }

// IsZero reports whether s is no schedule.
func (s Schedule) IsZero() bool { return s.text == "" }

// Location is the zone the schedule's times are in.
func (s Schedule) Location() *time.Location { return s.loc }

// Every is the interval of an interval schedule, 0 for a calendar one.
func (s Schedule) Every() time.Duration { return s.every }

var dayNames = map[string]int{
	"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tues": 2, "tuesday": 2,
	"wed": 3, "wednesday": 3, "thu": 4, "thur": 4, "thurs": 4, "thursday": 4,
	"fri": 5, "friday": 5, "sat": 6, "saturday": 6,
}

var monthNames = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

const (
	allDays     = 1<<7 - 1
	weekdayBits = allDays &^ (1 | 1<<6)
	weekendBits = 1 | 1<<6
)

// Syntax is the schedule syntax, as error messages and docs give it.
const Syntax = `"daily 07:00", "weekdays 08:30", "mon,thu 18:00", "weekly fri 17:00", ` +
	`"every 4h", or "cron 0 7 * * 1-5"; a time zone may follow ("daily 07:00 Europe/Paris")`

// Parse reads a schedule. Its times are in local unless the text ends with
// a time zone name (an IANA name such as Europe/Paris, or UTC). Forms:
//
//	daily 07:00              every day at 07:00 (also "every day at 07:00")
//	daily 07:00,19:30        twice a day
//	weekdays 08:30           Monday to Friday ("every weekday at 08:30")
//	weekends 10:00           Saturday and Sunday
//	mon,thu 18:00            on those days ("every monday at 9:00", "weekly fri 17:00")
//	every 4h                 at 00:00, 04:00, 08:00… on the zone's clock (whole hours
//	                         that divide a day); any other interval (15m, 90m, 5h)
//	                         at every multiple of it since 1970-01-01T00:00Z, so
//	                         that daylight-saving changes neither skip nor double one
//	cron 0 7 * * 1-5         a five-field cron expression (minute hour day-of-month month day-of-week)
func Parse(text string, local *time.Location) (Schedule, error) {
	if len(text) > MaxLen {
		return Schedule{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxLen)
	}
	fields := strings.Fields(strings.ToLower(text))
	if len(fields) == 0 {
		return Schedule{}, fmt.Errorf("%w: empty; write one like %s", ErrInvalid, Syntax)
	}
	s := Schedule{text: strings.Join(strings.Fields(text), " "), loc: local}
	if s.loc == nil {
		s.loc = time.Local
	}
	// A zone name, case kept, ends the text.
	orig := strings.Fields(text)
	if last := orig[len(orig)-1]; strings.Contains(last, "/") || strings.EqualFold(last, "utc") {
		name := last
		if strings.EqualFold(name, "utc") {
			name = "UTC"
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return Schedule{}, fmt.Errorf("%w: %q: unknown time zone %q (an IANA name such as Europe/Paris)", ErrInvalid, s.text, last)
		}
		s.loc = loc
		fields = fields[:len(fields)-1]
		if len(fields) == 0 {
			return Schedule{}, fmt.Errorf("%w: %q names a time zone and no schedule; write one like %s", ErrInvalid, s.text, Syntax)
		}
	}
	var err error
	switch fields[0] {
	case "cron":
		err = s.parseCron(fields[1:])
	case "every":
		if len(fields) == 2 {
			if d, derr := time.ParseDuration(fields[1]); derr == nil {
				err = s.setEvery(d)
				break
			}
		}
		err = s.parseCalendar(fields[1:])
	default:
		err = s.parseCalendar(fields)
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("%w: %q: %v; write one like %s", ErrInvalid, s.text, err, Syntax)
	}
	return s, nil
}

func (s *Schedule) setEvery(d time.Duration) error {
	if d < MinEvery || d > MaxEvery {
		return fmt.Errorf("an interval of %v is outside %v to %v", d, MinEvery, time.Duration(MaxEvery))
	}
	if d%time.Minute != 0 {
		return fmt.Errorf("an interval of %v is not whole minutes", d)
	}
	s.every = d
	switch {
	case d%time.Hour == 0 && 24*time.Hour%d == 0:
		s.minute = 1
		s.hour = stepBits(0, 23, int(d/time.Hour))
	default:
		return nil // absolute: see Next
	}
	s.dom, s.month, s.dow = allBits(1, 31), allBits(1, 12), allDays
	s.domStar, s.dowStar = true, true
	return nil
}

// onClock reports whether s falls on the zone's clock (a calendar, or an
// interval of whole hours that divides a day), rather than at multiples of an
// interval since the Unix epoch.
func (s Schedule) onClock() bool { return s.hour != 0 }

func stepBits(lo, hi, step int) uint64 {
	var b uint64
	for i := lo; i <= hi; i += step {
		b |= 1 << i
	}
	return b
}

// parseCalendar reads "daily T", "weekdays T", "DAYS T", "weekly DAY T",
// "day at T", with an optional "at" before the times.
func (s *Schedule) parseCalendar(f []string) error {
	if len(f) == 0 {
		return errors.New("no days and no time")
	}
	var days uint64
	switch f[0] {
	case "daily", "day", "everyday":
		days = allDays
	case "weekdays", "weekday":
		days = weekdayBits
	case "weekends", "weekend":
		days = weekendBits
	case "weekly":
		if len(f) < 2 {
			return errors.New(`"weekly" needs a day ("weekly fri 17:00")`)
		}
		f = f[1:]
		fallthrough
	default:
		for _, name := range strings.Split(f[0], ",") {
			d, ok := dayNames[strings.TrimSuffix(name, "s")]
			if !ok {
				d, ok = dayNames[name]
			}
			if !ok {
				return fmt.Errorf("%q is not a day (mon, tue, … or daily, weekdays, weekends)", name)
			}
			days |= 1 << d
		}
	}
	f = f[1:]
	if len(f) > 0 && f[0] == "at" {
		f = f[1:]
	}
	if len(f) != 1 {
		return errors.New("expected one time, or times separated by commas, such as 07:00 or 07:00,19:30")
	}
	for _, t := range strings.Split(f[0], ",") {
		h, m, err := clock(t)
		if err != nil {
			return err
		}
		s.hour |= 1 << h
		s.minute |= 1 << m
		if bits.OnesCount64(s.hour) > 1 && bits.OnesCount64(s.minute) > 1 {
			return errors.New("times with different hours must have the same minutes (07:00,19:00), or use cron")
		}
	}
	s.dom, s.month, s.dow = allBits(1, 31), allBits(1, 12), days
	s.domStar, s.dowStar = true, days == allDays
	return nil
}

// clock reads HH:MM (24-hour) or H:MMam/pm.
func clock(t string) (h, m int, err error) {
	pm, am := strings.HasSuffix(t, "pm"), strings.HasSuffix(t, "am")
	t = strings.TrimSuffix(strings.TrimSuffix(t, "pm"), "am")
	hs, ms, ok := strings.Cut(t, ":")
	if !ok {
		ms = "00"
		if !pm && !am {
			return 0, 0, fmt.Errorf("%q is not a time (HH:MM)", t)
		}
	}
	h, err1 := strconv.Atoi(hs)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || len(ms) != 2 || m < 0 || m > 59 || h < 0 || h > 23 {
		return 0, 0, fmt.Errorf("%q is not a time (HH:MM, 00:00 to 23:59)", t)
	}
	if pm || am {
		if h < 1 || h > 12 {
			return 0, 0, fmt.Errorf("%q is not a 12-hour time", t)
		}
		h %= 12
		if pm {
			h += 12
		}
	}
	return h, m, nil
}

func allBits(lo, hi int) uint64 {
	var b uint64
	for i := lo; i <= hi; i++ {
		b |= 1 << i
	}
	return b
}

// parseCron reads the five fields of a cron expression.
func (s *Schedule) parseCron(f []string) error {
	if len(f) != 5 {
		return fmt.Errorf("a cron expression has 5 fields (minute hour day-of-month month day-of-week), found %d", len(f))
	}
	var err error
	if s.minute, err = cronField(f[0], 0, 59, nil); err != nil {
		return fmt.Errorf("minute: %v", err)
	}
	if s.hour, err = cronField(f[1], 0, 23, nil); err != nil {
		return fmt.Errorf("hour: %v", err)
	}
	if s.dom, err = cronField(f[2], 1, 31, nil); err != nil {
		return fmt.Errorf("day of month: %v", err)
	}
	if s.month, err = cronField(f[3], 1, 12, monthNames); err != nil {
		return fmt.Errorf("month: %v", err)
	}
	if s.dow, err = cronField(f[4], 0, 7, dayNames); err != nil {
		return fmt.Errorf("day of week: %v", err)
	}
	if s.dow&(1<<7) != 0 { // 7 is Sunday too
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar, s.dowStar = f[2] == "*" || f[2] == "?", f[4] == "*" || f[4] == "?"
	return nil
}

// cronField reads one cron field: *, N, N-M, lists, and /step.
func cronField(f string, lo, hi int, names map[string]int) (uint64, error) {
	var b uint64
	for _, part := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi {
				return 0, fmt.Errorf("%q: bad step", part)
			}
			step = n
		}
		first, last := lo, hi
		switch {
		case rng == "*" || rng == "?":
		default:
			a, z, isRange := strings.Cut(rng, "-")
			var err error
			if first, err = cronValue(a, lo, hi, names); err != nil {
				return 0, err
			}
			last = first
			if isRange {
				if last, err = cronValue(z, lo, hi, names); err != nil {
					return 0, err
				}
				if last < first {
					return 0, fmt.Errorf("%q: a range must go up", part)
				}
			} else if hasStep {
				last = hi
			}
		}
		for i := first; i <= last; i += step {
			b |= 1 << i
		}
	}
	return b, nil
}

func cronValue(v string, lo, hi int, names map[string]int) (int, error) {
	if n, ok := names[v]; ok && len(v) == 3 {
		return n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", v, lo, hi)
	}
	return n, nil
}

// horizon bounds the search for a calendar schedule's next occurrence: a
// schedule that matches nothing within it (February 30th) never falls due.
const horizon = 8 * 366 * 24 * time.Hour

// Next returns the first occurrence strictly after t, or the zero time when
// the schedule has none within eight years (or is no schedule).
func (s Schedule) Next(t time.Time) time.Time {
	if s.IsZero() {
		return time.Time{}
	}
	if !s.onClock() {
		return s.epochFloor(t).Add(s.every)
	}
	end := t.Add(horizon)
	// Walk the wall clock forward from the minute after t.
	w := t.In(s.loc)
	y, mo, d := w.Date()
	h, mi := w.Hour(), w.Minute()+1
	for {
		// Normalise the wall clock fields (minute 60 is the next hour…).
		wall := time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
		y, mo, d = wall.Date()
		h, mi = wall.Hour(), wall.Minute()
		if at := s.instant(y, mo, d, 0, 0); at.After(end) {
			return time.Time{}
		}
		switch {
		case s.month&(1<<uint(mo)) == 0:
			mo, d, h, mi = mo+1, 1, 0, 0
			continue
		case !s.dayMatches(y, mo, d):
			d, h, mi = d+1, 0, 0
			continue
		case s.hour&(1<<uint(h)) == 0:
			h, mi = h+1, 0
			continue
		case s.minute&(1<<uint(mi)) == 0:
			mi++
			continue
		}
		if at := s.instant(y, mo, d, h, mi); at.After(t) {
			return at
		}
		mi++
	}
}

// dayMatches applies cron's rule: when both the day of month and the day
// of week are restricted, either matching is enough.
func (s Schedule) dayMatches(y int, mo time.Month, d int) bool {
	dom := s.dom&(1<<uint(d)) != 0
	dow := s.dow&(1<<uint(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday())) != 0
	if !s.domStar && !s.dowStar {
		return dom || dow
	}
	return dom && dow
}

// instant is the first instant the zone's clock shows the wall time, or,
// for a time the clock skips, the end of the gap.
func (s Schedule) instant(y int, mo time.Month, d, h, mi int) time.Time {
	at := time.Date(y, mo, d, h, mi, 0, 0, s.loc)
	if at.Hour() != h || at.Minute() != mi {
		// In a gap: Go chose an offset that moved the clock. The first
		// instant after the gap shows a later wall time; find the gap's
		// end (the zone's next transition after the instant an hour back).
		lo := at.Add(-3 * time.Hour)
		for lo.Before(at.Add(3 * time.Hour)) {
			next := lo.Add(time.Minute)
			if _, off1 := lo.Zone(); true {
				if _, off2 := next.Zone(); off1 != off2 {
					return next.Truncate(time.Minute)
				}
			}
			lo = next
		}
		return at
	}
	// A wall time the clock shows twice: the first time.
	if earlier := at.Add(-time.Hour); earlier.Hour() == h && earlier.Minute() == mi {
		return earlier
	}
	return at
}

// Missed returns the occurrences due after last and at or before now: how
// many there were, the first and the latest. n is 0 when none fell due.
// Counting stops at limit (the result then says n == limit).
func (s Schedule) Missed(last, now time.Time, limit int) (n int, first, latest time.Time) {
	for t := s.Next(last); !t.IsZero() && !t.After(now); t = s.Next(t) {
		if n == 0 {
			first = t
		}
		latest = t
		n++
		if n == limit {
			// The latest due one is still what fires: find it directly.
			latest = s.Prev(now)
			break
		}
	}
	return n, first, latest
}

// Prev returns the latest occurrence at or before t, the zero time when
// there is none within eight years.
func (s Schedule) Prev(t time.Time) time.Time {
	if s.IsZero() {
		return time.Time{}
	}
	if !s.onClock() {
		return s.epochFloor(t)
	}
	// Step back in days until a day with an occurrence, then walk it.
	for back := 0; back < 8*366; back++ {
		day := t.In(s.loc).AddDate(0, 0, -back)
		y, mo, d := day.Date()
		start := time.Date(y, mo, d, 0, 0, 0, 0, s.loc).Add(-time.Minute)
		endOfDay := time.Date(y, mo, d+1, 0, 0, 0, 0, s.loc)
		var best time.Time
		for at := s.Next(start); !at.IsZero() && !at.After(t) && at.Before(endOfDay); at = s.Next(at) {
			best = at
		}
		if !best.IsZero() {
			return best
		}
	}
	return time.Time{}
}

// epochFloor is the latest multiple of the interval since the Unix epoch
// at or before t.
func (s Schedule) epochFloor(t time.Time) time.Time {
	d := int64(s.every)
	n := t.UnixNano()
	q := n / d
	if n%d < 0 {
		q--
	}
	return time.Unix(0, q*d)
}
