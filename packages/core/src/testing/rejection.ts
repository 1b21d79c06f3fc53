/**
 * What `promise` rejects with, for assertions on typed errors (`toBeInstanceOf`, `code`, `kind`,
 * `cause`) that `rejects.toThrow` cannot reach. Fails the test if the promise resolves instead.
 */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
