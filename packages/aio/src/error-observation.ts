/**
 * What the all-in-one image answers once its shell session is corrupted (typically after
 * concurrent commands on one session): no command runs, and every later command on that session
 * gets the same answer. The only cure is a fresh session.
 */
export const ERROR_OBSERVATION_SIGNATURE = "'ErrorObservation' object has no attribute 'exit_code'";

export function hasErrorObservation(text: string | null | undefined): boolean {
  return typeof text === 'string' && text.includes(ERROR_OBSERVATION_SIGNATURE);
}
