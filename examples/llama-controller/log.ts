// Structured logging: one JSON object per line on stderr (an example, so no logging library).
export type Level = 'debug' | 'info' | 'warn' | 'error';
export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  /** A logger that adds these fields to every line. */
  with(fields: Fields): Logger;
}

const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function isLevel(v: string): v is Level {
  return v in rank;
}

export function createLogger(minLevel: Level, base: Fields = {}, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (level: Level, msg: string, fields?: Fields) => {
    if (rank[level] < rank[minLevel]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }, errorsAsText) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    with: (f) => createLogger(minLevel, { ...base, ...f }, write),
  };
}

/** Errors have no enumerable fields: log their message (and HTTP code when the client gives one). */
function errorsAsText(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return typeof code === 'number' ? `${value.message} (HTTP ${code})` : value.message;
  }
  return value;
}
