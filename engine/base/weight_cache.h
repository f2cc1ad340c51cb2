/* weight_cache: the folder of files derived from a model's weights (the CPU backend's
 * repack cache, cpu/repack_cache.c): where it is, its settings, the names of a model's
 * files, their removal when the model's blob goes (`anvil rm`, prune), and the bound on
 * its size (least recently used files go first). It knows file names only, not formats.
 *
 * Folder: $ANVIL_REPACK_CACHE_DIR, else $XDG_CACHE_HOME/anvil/repack, else
 * ~/.cache/anvil/repack (next to the Vulkan pipeline cache). Files: "<model>.<isa>.v<N>.rpk"
 * where <model> is "sha256-<64 hex>" for a store blob (its digest) or "file-<32 hex>" for a
 * loose .gguf (a hash of its identity); temporaries "<name>.<pid>-<n>.tmp" while written.
 * Settings: ANVIL_REPACK_CACHE=0 turns the cache off (1, the default, on);
 * ANVIL_REPACK_CACHE_MAX_GB bounds the folder (default 20; decimals allowed);
 * ANVIL_REPACK_CACHE_MIN_MB: models with fewer MB of repacked weights are repacked at
 * every start and get no file (default 64: they repack in well under a second). */
#ifndef ANVIL_WEIGHT_CACHE_H
#define ANVIL_WEIGHT_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WCACHE_DEFAULT_MAX_GB 20.0
#define WCACHE_DEFAULT_MIN_MB 64.0
#define WCACHE_EXT ".rpk"

typedef struct { bool enabled; uint64_t max_bytes, min_bytes; } wcache_config;
/* The settings above: 0, or -1 + error naming the variable when a value is malformed. */
int wcache_settings(wcache_config *out);
/* The folder (not created): 0, or -1 + error when neither variable nor HOME is set. */
int wcache_dir(char *out, size_t cap);
/* Creates dir and its parents: 0, or -1 + error. */
int wcache_mkdirs(const char *dir);
/* A new temporary file beside final_path, open for writing: the fd, *tmp_out its malloc'd
 * name; -1 + error. */
int wcache_create_temp(const char *final_path, char **tmp_out);
/* Marks an open cache file as used now (its mtime orders the LRU bound). */
void wcache_touch_fd(int fd);
/* Deletes the least recently used cache files of dir until they total at most
 * max_bytes - incoming, never the file named keep (may be NULL); also temporaries older
 * than an hour (a crashed writer's). Returns the number of files deleted. */
int wcache_prune(const char *dir, uint64_t max_bytes, uint64_t incoming, const char *keep);
/* Deletes every cache file (any ISA, any version) of the store blob with this digest
 * ("sha256:<hex>" or "sha256-<hex>"), in the default folder. Returns the number deleted. */
int wcache_remove_digest(const char *digest);
#endif
