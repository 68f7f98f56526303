// What identity offers privacy requests and retention (src/privacy/): a
// person's records — found from a contact or a visitor, read for an export,
// erased in bounded steps. The statements are identity's repositories'; each
// takes the database or the caller's transaction (an erasure step renews its
// lease and records its counts in the same one), and names the organisation.
export {
  contactsOfPersons,
  type PersonContact,
  type PersonProfileRow,
  type PersonVisitor,
  personOfContact,
  personOfVisitor,
  personsSeenSince,
  profilesOfPersons,
  visitorsNotSeenSince,
  visitorsOfPersons,
} from './person-data.repository.ts';
export { deleteContactsOfPersons, deletePersons, deleteVisitors, forgetProductUrls, lockVisitors } from './person-erasure.repository.ts';
