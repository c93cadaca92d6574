package tokenizer

import (
	"fmt"
	"strings"
	"time"
)

// strftimeNow is transformers' strftime_now global: the time of the
// render formatted with Python's strftime (gpt-oss's template writes
// "Current date: " + strftime_now("%Y-%m-%d")).
func strftimeNow(now time.Time) func(string) string {
	return func(format string) string { return strftime(now, format) }
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// strftime formats t as Python's time.strftime does in the C locale, for
// the directives C89 defines and %-less text; any other directive is
// written back as it stands, as glibc does.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := format[i]; d {
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(map[bool]string{true: "AM", false: "PM"}[t.Hour() < 12])
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'B':
			b.WriteString(t.Month().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(weekdays[t.Weekday()])
		case 'a':
			b.WriteString(weekdays[t.Weekday()][:3])
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}
