#include <curl/curl.h>

// curl_easy_setopt and curl_multi_setopt are variadic: Swift cannot call them. One typed shim per argument kind.
static inline CURLcode parley_curl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode parley_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode parley_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode parley_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode parley_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode parley_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode parley_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}

// A response body is read and thrown away, at most `PARLEY_CURL_BODY_LIMIT` bytes: past that the transfer is cut
// (CURLE_WRITE_ERROR; the status line already read stands). `*seen` counts the bytes.
#define PARLEY_CURL_BODY_LIMIT 65536
static inline size_t parley_curl_discard(char *data, size_t size, size_t count, void *seen) {
    (void)data;
    size_t *total = (size_t *)seen;
    *total += size * count;
    return *total > PARLEY_CURL_BODY_LIMIT ? 0 : size * count;
}
static inline CURLcode parley_curl_easy_discard_body(CURL *h, size_t *seen) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, parley_curl_discard);
    if (rc != CURLE_OK) return rc;
    return curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)seen);
}
