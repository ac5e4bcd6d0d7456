package mysqltest

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/testenv"
)

// FlipZone is a time zone of the test's own with one daylight-saving change: offset before (east
// of UTC) until flip, after from flip on — Europe/Berlin's autumn change moved to flip is
// FlipZone(tb, flip, 2*time.Hour, time.Hour, …), its spring change the other way round — so that a
// test sees a change happen while the console runs. It has a unique name (Redrive/t_…) that
// time.LoadLocation cannot find: the location returned is the zone. With inServer it is also
// written into the server's time zone tables (mysql.time_zone*, as mariadb-tzinfo-to-sql writes a
// zone; with the admin account) and removed when tb ends, so that SET time_zone can name it, as
// on a server whose zone tables are loaded; without, the server does not know the name.
func FlipZone(tb testing.TB, flip time.Time, before, after time.Duration, inServer bool) *time.Location {
	tb.Helper()
	name := "Redrive/" + testenv.Name()
	// Two transitions, as both Go and the server read them: to before at the epoch (what precedes
	// a zone's first transition is each one's guess), to after at flip.
	type kind struct {
		offset int32
		dst    bool
		abbr   string
	}
	kinds := []kind{{int32(before / time.Second), before > after, abbr(before)}, {int32(after / time.Second), after > before, abbr(after)}}
	at := []int64{0, flip.Unix()}

	// TZif version 1 (RFC 8536): header, transition times, their types, the types, the names.
	var b []byte
	be32 := func(v int32) { b = binary.BigEndian.AppendUint32(b, uint32(v)) }
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...) // version 1, reserved
	names := ""
	for _, k := range kinds {
		names += k.abbr + "\x00"
	}
	for _, n := range []int{0, 0, 0, len(at), len(kinds), len(names)} { // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
		be32(int32(n))
	}
	for _, t := range at {
		be32(int32(t))
	}
	b = append(b, 0, 1)
	idx := 0
	for _, k := range kinds {
		be32(k.offset)
		dst := byte(0)
		if k.dst {
			dst = 1
		}
		b = append(b, dst, byte(idx))
		idx += len(k.abbr) + 1
	}
	b = append(b, names...)
	loc, err := time.LoadLocationFromTZData(name, b)
	if err != nil {
		tb.Fatalf("mysqltest: zone: %v", err)
	}
	if !inServer {
		return loc
	}

	admin := adminDatabase(tb)
	q := fmt.Sprintf(`INSERT INTO mysql.time_zone (Use_leap_seconds) VALUES ('N');
		SET @id = LAST_INSERT_ID();
		INSERT INTO mysql.time_zone_name (Name, Time_zone_id) VALUES ('%s', @id);`, name)
	for i, k := range kinds {
		dst := 0
		if k.dst {
			dst = 1
		}
		q += fmt.Sprintf(`INSERT INTO mysql.time_zone_transition_type (Time_zone_id, Transition_type_id, `+"`Offset`"+`, Is_DST, Abbreviation)
			VALUES (@id, %d, %d, %d, '%s');`, i, k.offset, dst, k.abbr)
		q += fmt.Sprintf(`INSERT INTO mysql.time_zone_transition (Time_zone_id, Transition_time, Transition_type_id)
			VALUES (@id, %d, %d);`, at[i], i)
	}
	tb.Cleanup(func() {
		Exec(tb, admin, fmt.Sprintf(`SET @id = (SELECT Time_zone_id FROM mysql.time_zone_name WHERE Name = '%s');
			DELETE FROM mysql.time_zone_transition WHERE Time_zone_id = @id;
			DELETE FROM mysql.time_zone_transition_type WHERE Time_zone_id = @id;
			DELETE FROM mysql.time_zone_name WHERE Time_zone_id = @id;
			DELETE FROM mysql.time_zone WHERE Time_zone_id = @id`, name))
	})
	Exec(tb, admin, q)
	return loc
}

// abbr names an offset as zones without a name for it do: +02, -0330.
func abbr(off time.Duration) string {
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	h, m := int(off/time.Hour), int(off%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%s%02d", sign, h)
	}
	return fmt.Sprintf("%s%02d%02d", sign, h, m)
}
