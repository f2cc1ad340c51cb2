/* sys/file.h (Windows build): flock and LOCK_* are declared in anvil_win.h (force-included). */
#include "../anvil_win.h"
