/* pwd.h (Windows build): no password database; the home directory is %USERPROFILE%
 * (HOME falls back to it, engine/base/settings.c), so getpwuid finds none. */
#ifndef ANVIL_WIN_PWD_H
#define ANVIL_WIN_PWD_H
#include <sys/types.h>
struct passwd { char *pw_name, *pw_dir; };
static inline int getuid(void) { return 0; }
static inline struct passwd *getpwuid(int uid) { (void)uid; return NULL; }
#endif
