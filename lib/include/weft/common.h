/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every weft header needs: the export marker and the C++ guards.
 */
#ifndef WEFT_COMMON_H
#define WEFT_COMMON_H

#include <stddef.h>

#if defined(__GNUC__) && __GNUC__ >= 4
#define WEFT_EXPORT __attribute__((visibility("default")))
#else
#define WEFT_EXPORT
#endif

#if defined(__GNUC__)
#define WEFT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define WEFT_PRINTF(fmt, args)
#endif

#ifdef __cplusplus
#define WEFT_BEGIN_DECLS extern "C" {
#define WEFT_END_DECLS }
#else
#define WEFT_BEGIN_DECLS
#define WEFT_END_DECLS
#endif

#endif /* WEFT_COMMON_H */
