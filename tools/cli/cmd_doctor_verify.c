/* cmd_doctor_verify: `anvil doctor --verify [MODEL] [--all]`: every kernel MODEL would use
 * (or a standard set of shapes), on each GPU (Vulkan or HIP) Anvil would use, against the CPU
 * reference (engine/device/gpu_verify.c); prints one line per failed case (every case with
 * --all or --verbose) with its error and the checked fix, caches the verdict per device +
 * driver. Exit status 1 when a case fails or nothing could be verified. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "device.h"
#include "error.h"
#include "gpu_verify.h"
#include "model_place.h"
#include "store.h"

int cmd_doctor_verify(int argc, char **argv);

int cmd_doctor_verify(int argc, char **argv) {
    const char *model_arg = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verify")) continue;
        if (!strcmp(argv[i], "--all") || !strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) all = true;
        else if (argv[i][0] == '-') { fprintf(stderr, "anvil doctor --verify: unknown option '%s'\n", argv[i]); return 2; }
        else if (!model_arg) model_arg = argv[i];
        else { fprintf(stderr, "anvil doctor --verify: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    device_list *l = cli_devices_selected();
    if (!l) return 1;
    model *m = NULL;
    if (model_arg) {
        store_entry entry;
        if (store_resolve(NULL, model_arg, &entry) != 0) { fprintf(stderr, "anvil: %s\n", anv_last_error()); device_list_free(l); return 1; }
        m = model_load_with(entry.model_path, 1, NULL, 0);
        store_entry_clear(&entry);
        if (!m) { fprintf(stderr, "anvil: %s\n", anv_last_error()); device_list_free(l); return 1; }
    }
    int n_dev = 0, failed = 0;
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        if (!d->used || (d->backend != DEV_BACKEND_VULKAN && d->backend != DEV_BACKEND_HIP)) continue;
        const gv_target t = { d->backend, d->backend_index };
        n_dev++;
        backend *be = device_open(l, i, 1);
        if (!be) { printf("verify %s: cannot open: %s\n", d->id, anv_last_error()); failed++; continue; }
        static gv_report r;
        int rc = gpu_verify_run(be, t, m, &r);
        if (rc < 0) { printf("verify %s: could not run: %s\n", d->id, anv_last_error()); failed++; }
        else {
            gpu_verify_print(stdout, &r, all);
            char path[600];
            if (gpu_verify_cache_write(t, &r) == 0 && gpu_verify_cache_path(t, path, sizeof path))
                printf("verify: result cached in %s\n", path);
            if (rc > 0) failed++;
        }
        be->ops->destroy(be);
    }
    if (n_dev == 0)
        printf("verify: no GPU (Vulkan or HIP) would be used (see anvil devices); ANVIL_VK_VISIBLE_DEVICES=N or ANVIL_DEVICE=vulkanN|hipN picks one\n");
    if (m) model_free(m);
    device_list_free(l);
    return n_dev == 0 || failed ? 1 : 0;
}
