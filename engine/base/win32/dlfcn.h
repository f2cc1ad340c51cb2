/* dlfcn.h (Windows build): dlopen/dlsym/dlclose/dlerror over LoadLibraryW/GetProcAddress
 * (engine/base/platform_win.c); how vk_loader.c opens vulkan-1.dll. */
#ifndef ANVIL_WIN_DLFCN_H
#define ANVIL_WIN_DLFCN_H
#define RTLD_LAZY 1
#define RTLD_NOW 2
#define RTLD_LOCAL 0
#define RTLD_GLOBAL 0
#define RTLD_NOLOAD 4
void *dlopen(const char *name, int flags);
void *dlsym(void *handle, const char *name);
int dlclose(void *handle);
char *dlerror(void);
#endif
