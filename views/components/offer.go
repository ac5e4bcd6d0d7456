package components

// Offer is one action a page may show a button for. OK is true when the signed-in user may take it
// now: the route's role allows it and the use case's own rule says yes for this user, as the API
// would answer. Otherwise the page shows Note instead of the button ("Operators can cancel this
// job"), or nothing when Note is "" (nobody could take it now, e.g. the job has ended).
type Offer struct {
	OK   bool
	Note string
}
