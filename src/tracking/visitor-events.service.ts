// What tracking offers privacy requests and retention (src/privacy/): the
// events of given visitors — read for an export, their product sightings,
// deleted in batches. The statements are visitor-events.repository.ts's; each
// takes the database or the caller's transaction, and names the organisation.
export { deleteEventsOfVisitors, eventsOfVisitors, productSightingsOfVisitors, type VisitorEvent } from './visitor-events.repository.ts';
