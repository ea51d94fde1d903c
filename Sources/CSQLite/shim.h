#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: sqlite3_bind_text copies the bytes.
static inline int parley_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
    return sqlite3_bind_text(s, i, text, n, SQLITE_TRANSIENT);
}
