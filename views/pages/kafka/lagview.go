package kafka

// lagHint is what the group page says under its total lag: whether the offsets were read when the
// page was made (a commit shows at once) or are the sample's.
func lagHint(p GroupPage) string {
	if p.OffsetsAt.IsZero() {
		return "messages behind, as sampled"
	}
	return "messages behind, offsets read live"
}
