/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Long help texts kept outside the code, one file per topic:
 * $(weftx_datadir)/help/TOOL-TOPIC.txt, shown by "TOOL --help TOPIC".
 */
#ifndef WT_HELP_H
#define WT_HELP_H

#include <stdio.h>

/** \brief Copy the topic's text to \p out. \p topics lists the known ones
 * (NULL-terminated) for the message when \p topic is not one of them.
 * \return 0, or -1 after one line on stderr (unknown topic, unreadable file). */
int wt_help_topic(FILE *out, const char *tool, const char *topic, const char *const *topics);

/** \brief Write \p text word-wrapped to \p width columns and a newline: the
 * cursor is at column \p col, continuation lines start at column \p indent. */
void wt_help_wrap(FILE *out, const char *text, int col, int indent, int width);

#endif /* WT_HELP_H */
