/* grp.h (Windows build): no group database (device access is not by group on Windows);
 * getgrgid finds none, so doctor's group names stay empty. */
#ifndef ANVIL_WIN_GRP_H
#define ANVIL_WIN_GRP_H
#include <sys/types.h>
typedef unsigned gid_t;
struct group { char *gr_name; };
static inline struct group *getgrgid(unsigned gid) { (void)gid; return NULL; }
#endif
