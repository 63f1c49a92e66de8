/* tg_api.h: TG_API marks the functions of tg's public headers, the only
 * names libtg.so exports (the library is built with -fvisibility=hidden, so
 * everything else stays internal). Every function declared in a header of
 * include/ carries it; the test exports_match_headers checks libtg.so
 * against the headers. */
#ifndef TG_API_H
#define TG_API_H

#if defined(_WIN32)
#define TG_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define TG_API __attribute__((visibility("default")))
#else
#define TG_API
#endif

#endif
