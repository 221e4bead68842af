/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef WEFT_MAP_H
#define WEFT_MAP_H

#include <weft/common.h>
#include <weft/errors.h>

WEFT_BEGIN_DECLS

WEFT_END_DECLS

#endif /* WEFT_MAP_H */
