/* settings_table: the rows of the settings table (settings_table.c), for settings.c only. */
#ifndef ANVIL_SETTINGS_TABLE_H
#define ANVIL_SETTINGS_TABLE_H
#include "settings.h"

extern const anv_setting anv_settings_rows[];
extern const size_t anv_settings_n_rows;
#endif
