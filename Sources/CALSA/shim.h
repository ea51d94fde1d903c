#include <alsa/asoundlib.h>

/// ALSA's error handler type is variadic (`const char *fmt, ...`), which Swift cannot implement: this C no-op stands in.
static void parley_alsa_ignore_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// Silences ALSA's own error printer (`ALSA lib pcm.c:… Unknown PCM default` and the like on stderr): the caller
/// reports failures itself, in one line, from the error codes. Returns what `snd_lib_error_set_handler` returns.
static inline int parley_alsa_silence_errors(void) {
    return snd_lib_error_set_handler(parley_alsa_ignore_error);
}
