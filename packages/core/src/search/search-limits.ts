/** `glob` result cap when the caller gives none. */
export const DEFAULT_GLOB_MAX_RESULTS = 200;

/** `grep` result cap when the caller gives none. */
export const DEFAULT_GREP_MAX_RESULTS = 100;

/** `grep` skips files strictly larger than this many bytes. */
export const DEFAULT_MAX_FILE_SIZE_BYTES = 1_000_000;

/** A file is binary (and skipped by `grep`) when a NUL byte occurs in this many leading bytes. */
export const BINARY_SNIFF_BYTES = 8192;

/** Matched lines are cut to this many characters (`197 + "..."`). */
export const LINE_SUMMARY_LENGTH = 200;

/**
 * `grep` skips lines longer than this (counting the line's newline), so one minified bundle
 * cannot flood the result or hand a backtracking-prone pattern a huge input.
 */
export const MAX_GREP_LINE_LENGTH = 10 * LINE_SUMMARY_LENGTH;

/** `listDir` depth when the caller gives none: children and grandchildren. */
export const DEFAULT_LIST_DIR_DEPTH = 2;

/** Remote `listDir` reads at most this many directories and this many files. */
export const REMOTE_LIST_DIR_LIMIT = 500;

/** Wall clock of one grep or glob when the caller gives none (`sandbox.search_timeout_seconds`). */
export const DEFAULT_SEARCH_TIMEOUT_MS = 10_000;

/** Files a local grep sends to its worker in one message. */
export const GREP_BATCH_FILES = 128;
