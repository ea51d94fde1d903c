#include <speex/speex_jitter.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_resampler.h>
#include <speex/speex_echo.h>

// speex_*_ctl take a void* argument: typed inline shims so Swift can pass ints.
static inline int parley_jitter_ctl_int(JitterBuffer *jb, int request, spx_int32_t *value) { return jitter_buffer_ctl(jb, request, value); }
static inline int parley_preprocess_ctl_int(SpeexPreprocessState *st, int request, spx_int32_t *value) { return speex_preprocess_ctl(st, request, value); }
static inline int parley_echo_ctl_int(SpeexEchoState *st, int request, spx_int32_t *value) { return speex_echo_ctl(st, request, value); }

// SPEEX_PREPROCESS_SET_ECHO_STATE takes a SpeexEchoState* (not an int) through the same void* argument.
static inline int parley_preprocess_set_echo_state(SpeexPreprocessState *st, SpeexEchoState *echo) { return speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_ECHO_STATE, echo); }
