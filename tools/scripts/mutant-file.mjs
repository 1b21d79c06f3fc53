// One mutant applied to its file and taken back. The working tree may be shared with people
// editing it: a file that no longer holds the mutated text was edited meanwhile, and writing the
// original back would throw that edit away, so it is left alone and named instead.
import { readFileSync, writeFileSync } from 'node:fs';
import { applyMutant } from './mutation-list.mjs';

/** Writes the mutant into `file`; the returned state is what `restoreMutantSync` needs. */
export function applyMutantSync(file, mutant) {
  const original = readFileSync(file, 'utf8');
  const mutated = applyMutant(original, mutant);
  writeFileSync(file, mutated);
  return { file, original, mutated, mutant };
}

/**
 * Writes the original text back, unless the file was edited since the mutant was applied: then it
 * is left as it is, `warn` says what to check, and the result is false. Synchronous, so it can run
 * from a signal handler, where nothing async completes.
 */
export function restoreMutantSync(state, warn = (line) => console.error(line)) {
  const { file, original, mutated, mutant } = state;
  if (readFileSync(file, 'utf8') !== mutated) {
    warn(
      `${mutant.file} was edited while mutant ${mutant.id} was applied; left as it is now: ` +
        `check that it does not keep the mutant (${JSON.stringify(mutant.replace)} where ` +
        `${JSON.stringify(mutant.find)} stood)`,
    );
    return false;
  }
  writeFileSync(file, original);
  return true;
}
