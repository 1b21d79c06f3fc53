/**
 * What the agent has seen of each file, as sha256 hashes of full file contents keyed by
 * `(sandbox id, normalized virtual path)`. The read-before-write gate compares a file's current hash
 * with the recorded one before letting `write_file` / `str_replace` touch an existing file.
 *
 * A session is the unit of "what this agent knows": tool contexts that share a session share read
 * marks; separate sessions never do. Hosts decide the scope (one per agent run, or one per thread
 * persisted with `toJSON()` / `ToolSession.fromJSON()` so marks survive across turns).
 */
export class ToolSession {
  readonly #marks = new Map<string, string>();

  /** The recorded hash, or undefined when the agent never read this file in this session. */
  readMark(sandboxId: string, path: string): string | undefined {
    return this.#marks.get(ToolSession.key(sandboxId, path));
  }

  recordRead(sandboxId: string, path: string, sha256Hex: string): void {
    this.#marks.set(ToolSession.key(sandboxId, path), sha256Hex);
  }

  forget(sandboxId: string, path: string): void {
    this.#marks.delete(ToolSession.key(sandboxId, path));
  }

  /** Drops every mark, e.g. after the conversation history the marks stood for was summarised. */
  clear(): void {
    this.#marks.clear();
  }

  get size(): number {
    return this.#marks.size;
  }

  toJSON(): ToolSessionSnapshot {
    return {
      readMarks: [...this.#marks].map(([key, hash]) => {
        const [sandboxId = '', path = ''] = key.split('\u0000');
        return { sandboxId, path, hash };
      }),
    };
  }

  static fromJSON(snapshot: ToolSessionSnapshot): ToolSession {
    const session = new ToolSession();
    for (const mark of snapshot.readMarks) session.recordRead(mark.sandboxId, mark.path, mark.hash);
    return session;
  }

  private static key(sandboxId: string, path: string): string {
    return `${sandboxId}\u0000${path}`;
  }
}

export interface ToolSessionSnapshot {
  readMarks: { sandboxId: string; path: string; hash: string }[];
}
