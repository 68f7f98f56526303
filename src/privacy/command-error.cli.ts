// The error of a `trackway privacy` command that cannot be carried out (an
// unknown organisation, an invalid subject, a failed run): the CLI prints its
// message and exits with status 2. Its own module, so that the CLI's entry
// (src/main.ts, loaded by a cluster's primary too) need not load the rest of
// the privacy area to recognise it.
export class PrivacyCommandError extends Error {}
