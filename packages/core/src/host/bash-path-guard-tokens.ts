/**
 * A POSIX-shell-like word splitter for the bash path guard: quotes are removed and joined into
 * their word (`a"b c"d` → `ab cd`), a backslash outside single quotes escapes the next character
 * (inside double quotes only `"` and `\`), and runs of the operator characters `( ) ; < > | &`
 * become tokens of their own (`&&`, `2>&1` → `2` `>&` `1`). Newlines act as `;`. No expansion, no
 * comments: `#` is an ordinary character.
 *
 * Returns `undefined` for unbalanced quoting or a trailing backslash, so the caller can fall back
 * to a whitespace split — the shell rejects such a command anyway, and a syntax error must not
 * turn into a misleading security message.
 */
const OPERATOR_CHARS = new Set(['(', ')', ';', '<', '>', '|', '&']);
const WHITESPACE = new Set([' ', '\t', '\n', '\r', '\f', '\v']);

export function splitShellWords(command: string): string[] | undefined {
  const text = command.replace(/\r\n?/g, '\n').replace(/\n/g, ' ; ');
  const tokens: string[] = [];
  let word: string | undefined;
  const flush = () => {
    if (word !== undefined) tokens.push(word);
    word = undefined;
  };
  let i = 0;
  while (i < text.length) {
    const ch = text[i] as string;
    if (WHITESPACE.has(ch)) {
      flush();
      i++;
    } else if (OPERATOR_CHARS.has(ch)) {
      flush();
      let j = i;
      while (j < text.length && OPERATOR_CHARS.has(text[j] as string)) j++;
      tokens.push(text.slice(i, j));
      i = j;
    } else if (ch === '\\') {
      if (i + 1 >= text.length) return undefined;
      word = (word ?? '') + text[i + 1];
      i += 2;
    } else if (ch === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) return undefined;
      word = (word ?? '') + text.slice(i + 1, close);
      i = close + 1;
    } else if (ch === '"') {
      let j = i + 1;
      let inner = '';
      for (;;) {
        if (j >= text.length) return undefined;
        const c = text[j] as string;
        if (c === '"') break;
        if (c === '\\' && (text[j + 1] === '"' || text[j + 1] === '\\')) {
          inner += text[j + 1];
          j += 2;
          continue;
        }
        inner += c;
        j++;
      }
      word = (word ?? '') + inner;
      i = j + 1;
    } else {
      word = (word ?? '') + ch;
      i++;
    }
  }
  flush();
  return tokens;
}

/** Token-level split used when quoting is malformed. */
export function splitOnWhitespace(command: string): string[] {
  return command.split(/\s+/).filter(Boolean);
}
