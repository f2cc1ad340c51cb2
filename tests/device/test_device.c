/* test_device: the device-selection layer on synthetic device lists (no GPU needed):
 * dedup (RADV+AMDVLK, Vulkan+HIP), the type policy (dGPU+iGPU, NVIDIA+Intel, lavapipe
 * only), every environment variable and its malformed values, HIP visibility and gfx
 * targets, and layer placement (proportional to free memory, --tensor-split, fit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "error.h"
#include "model_place.h"
#include "testutil.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* ---- synthetic backends ---- */
static dev_info fake_vk[8], fake_hip[8];
static int n_fake_vk, n_fake_hip;
static bool fake_vk_missing;
static const char *fake_targets = "gfx1030,gfx1100";
static bool fake_runtime_applies;

static int enum_vk(void *u, dev_info *out, int max, char *why, size_t why_len) {
    (void)u;
    if (fake_vk_missing) { snprintf(why, why_len, "libvulkan.so.1 not found (install libvulkan1)"); return -1; }
    int n = n_fake_vk < max ? n_fake_vk : max;
    memcpy(out, fake_vk, sizeof(dev_info) * (size_t)n);
    return n;
}
static int enum_hip(void *u, dev_info *out, int max, char *why, size_t why_len) {
    (void)u; (void)why; (void)why_len;
    int n = n_fake_hip < max ? n_fake_hip : max;
    memcpy(out, fake_hip, sizeof(dev_info) * (size_t)n);
    return n;
}

static dev_info vk_dev(const char *name, uint32_t vendor, dev_type t, const char *drv, const char *info,
                       const char *pci, uint8_t uuid0, uint64_t total, uint64_t free_b) {
    dev_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.vendor_id = vendor;
    d.type = t;
    snprintf(d.driver_name, sizeof d.driver_name, "%s", drv);
    snprintf(d.driver_info, sizeof d.driver_info, "%s", info);
    if (pci) { d.has_pci = true; snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "%s", pci); }
    d.has_uuid = true;
    d.uuid[0] = uuid0;
    d.uuid[15] = 0x42;
    d.mem_total = total;
    d.mem_free = free_b;
    d.mem_free_known = true;
    d.fp16 = true;
    d.subgroup_size = 64;
    d.supported = true;
    return d;
}

static dev_info hip_dev(const char *name, const char *gfx, const char *pci, const char *uuid, dev_type t, uint64_t mem) {
    dev_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.vendor_id = 0x1002;
    d.type = t;
    snprintf(d.driver_name, sizeof d.driver_name, "ROCm 6.2");
    snprintf(d.gfx_target, sizeof d.gfx_target, "%s", gfx);
    if (pci) { d.has_pci = true; snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "%s", pci); }
    snprintf(d.uuid_str, sizeof d.uuid_str, "%s", uuid);
    d.mem_total = d.mem_free = mem;
    d.supported = true;
    return d;
}

static device_list *probe(void) {
    device_registry_reset();
    device_registry_use_builtin(false);
    device_enumerator v = {.kind = DEV_BACKEND_VULKAN, .name = "vulkan", .enumerate = enum_vk};
    device_register(&v);
    if (n_fake_hip) {
        device_enumerator h = {.kind = DEV_BACKEND_HIP, .name = "hip", .enumerate = enum_hip,
                               .hip_targets = fake_targets, .runtime_applies_visibility = fake_runtime_applies};
        device_register(&h);
    }
    device_list *l = device_list_probe();
    CHECK(l != NULL);
    return l;
}

static void reset_fakes(void) {
    n_fake_vk = n_fake_hip = 0;
    fake_vk_missing = false;
    fake_targets = "gfx1030,gfx1100";
    fake_runtime_applies = false;
}

static device_env env0(void) {
    device_env e;
    memset(&e, 0, sizeof e);
    e.os = DEV_OS_LINUX;
    return e;
}

static const dev_info *dev(const device_list *l, const char *id) {
    int i = device_list_find(l, id);
    return i >= 0 ? &l->dev[i] : NULL;
}
static bool used(const device_list *l, const char *id) { const dev_info *d = dev(l, id); return d && d->used; }
static dev_skip skipped(const device_list *l, const char *id) { const dev_info *d = dev(l, id); return d ? d->skip : (dev_skip)-1; }
static bool why_has(const device_list *l, const char *id, const char *s) { const dev_info *d = dev(l, id); return d && strstr(d->why, s); }
static bool fix_has(const device_list *l, const char *id, const char *s) { const dev_info *d = dev(l, id); return d && strstr(d->fix, s); }
static bool err_has(const char *s) { return strstr(anv_last_error(), s) != NULL; }
static bool note_has(const device_list *l, const char *s) {
    for (int i = 0; i < l->n_notes; i++) if (strstr(l->notes[i], s)) return true;
    return false;
}
/* select that must fail with an error containing both strings */
static void expect_error(device_list *l, const device_env *e, const char *var, const char *what) {
    anv_set_error("%s", "");
    int rc = device_list_select(l, e);
    CHECKF(rc == -1 && err_has(var) && (!what || err_has(what)), "rc=%d error='%s' want '%s' / '%s'", rc, anv_last_error(), var, what ? what : "");
    CHECKF(!strchr(anv_last_error(), '\n'), "error is not one line: %s", anv_last_error());
}

/* ---- scenarios ---- */

static void add_lavapipe(void) {
    fake_vk[n_fake_vk++] = vk_dev("llvmpipe (LLVM 15.0.6, 256 bits)", 0x10005, DEV_TYPE_SOFTWARE, "llvmpipe",
                                  "Mesa 22.3.6 (LLVM 15.0.6)", NULL, 0x6d, 8 * GiB, 6 * GiB);
}

static void test_only_lavapipe(void) {
    reset_fakes();
    add_lavapipe();
    device_list *l = probe();
    CHECK(l->n == 2);
    CHECK(l->dev[l->n - 1].backend == DEV_BACKEND_CPU && !strcmp(l->dev[l->n - 1].id, "cpu"));
    CHECK(!strcmp(dev(l, "vulkan0")->desc, "llvmpipe / Mesa lavapipe 22.3.6"));
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0);
    CHECK(!used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_SOFTWARE);
    CHECK(why_has(l, "vulkan0", "software rasteriser") && fix_has(l, "vulkan0", "ANVIL_VK_VISIBLE_DEVICES=0"));
    CHECK(used(l, "cpu"));
    int idx[4];
    CHECK(device_list_used_gpus(l, idx, 4) == 0);

    /* The explicit asks that make lavapipe usable. */
    e = env0(); e.anvil_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && dev(l, "vulkan0")->explicit_pick);
    CHECK(!used(l, "cpu") && skipped(l, "cpu") == DEV_SKIP_CPU_FALLBACK);
    e = env0(); e.ggml_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0"));
    e = env0(); e.device = "vulkan0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0"));
    e = env0(); e.anvil_vk_visible = " 0 ";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0"));
    /* ANVIL_ wins over GGML_, with a note. */
    e = env0(); e.anvil_vk_visible = "-1"; e.ggml_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && !used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_ENV);
    CHECK(why_has(l, "vulkan0", "ANVIL_VK_VISIBLE_DEVICES=-1") && note_has(l, "wins over GGML_VK_VISIBLE_DEVICES"));
    e = env0(); e.ggml_vk_visible = "-1";
    CHECK(device_list_select(l, &e) == 0 && why_has(l, "vulkan0", "GGML_VK_VISIBLE_DEVICES=-1"));
    /* Empty values are unset. */
    e = env0(); e.anvil_vk_visible = ""; e.backend = ""; e.device = ""; e.igpu = "";
    CHECK(device_list_select(l, &e) == 0 && skipped(l, "vulkan0") == DEV_SKIP_SOFTWARE);
    /* ANVIL_BACKEND=vulkan does not make a software device usable: an error, not a CPU fallback. */
    e = env0(); e.backend = "vulkan";
    expect_error(l, &e, "ANVIL_BACKEND=vulkan", "software rasteriser");
    e = env0(); e.backend = "vulkan"; e.anvil_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0"));
    e = env0(); e.backend = "cpu";
    CHECK(device_list_select(l, &e) == 0 && used(l, "cpu") && why_has(l, "vulkan0", "ANVIL_BACKEND=cpu"));
    e = env0(); e.device = "cpu";
    CHECK(device_list_select(l, &e) == 0 && used(l, "cpu"));

    /* Malformed values and indices that do not exist. */
    e = env0(); e.anvil_vk_visible = "1";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES=1", "no Vulkan device 1");
    e = env0(); e.ggml_vk_visible = "7";
    expect_error(l, &e, "GGML_VK_VISIBLE_DEVICES=7", "vulkan0");
    e = env0(); e.anvil_vk_visible = "zero";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES=zero", "not a device index");
    e = env0(); e.anvil_vk_visible = "0,-1";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES", "-1");
    e = env0(); e.anvil_vk_visible = "0,0";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES", "twice");
    e = env0(); e.anvil_vk_visible = "0x1";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES", NULL);
    e = env0(); e.anvil_vk_visible = ",";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES", "no device index");
    e = env0(); e.anvil_vk_visible = "99999999999999999999";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES", NULL);
    e = env0(); e.backend = "gpu";
    expect_error(l, &e, "ANVIL_BACKEND=gpu", "vulkan, hip or cpu");
    e = env0(); e.backend = "hip";
    expect_error(l, &e, "ANVIL_BACKEND=hip", "HIP is unavailable");
    e = env0(); e.device = "vulkan7";
    expect_error(l, &e, "ANVIL_DEVICE=vulkan7", "no such device");
    e = env0(); e.device = "gpu0";
    expect_error(l, &e, "ANVIL_DEVICE=gpu0", "expected a device id");
    e = env0(); e.device = "vulkan";
    expect_error(l, &e, "ANVIL_DEVICE=vulkan", NULL);
    e = env0(); e.device = "vulkan0"; e.anvil_vk_visible = "-1";
    expect_error(l, &e, "ANVIL_DEVICE=vulkan0", "ANVIL_VK_VISIBLE_DEVICES=-1");
    e = env0(); e.device = "vulkan0"; e.backend = "cpu";
    expect_error(l, &e, "ANVIL_DEVICE=vulkan0", "ANVIL_BACKEND=cpu");
    e = env0(); e.device = "cpu"; e.backend = "vulkan"; e.anvil_vk_visible = "0";
    expect_error(l, &e, "ANVIL_DEVICE=cpu", "ANVIL_BACKEND=vulkan");
    e = env0(); e.igpu = "yes";
    expect_error(l, &e, "ANVIL_IGPU=yes", "0 or 1");
    /* HIP variables without a HIP backend: a note, not an error (they are set for other apps). */
    e = env0(); e.hip_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && note_has(l, "HIP_VISIBLE_DEVICES is set"));
    /* Selecting twice gives the same notes (no accumulation). */
    int notes = l->n_notes;
    CHECK(device_list_select(l, &e) == 0 && l->n_notes == notes);
    device_list_free(l);
}

static void test_vulkan_unavailable(void) {
    reset_fakes();
    fake_vk_missing = true;
    device_list *l = probe();
    CHECK(l->n == 1 && l->vk_count == -1 && note_has(l, "libvulkan.so.1 not found"));
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "cpu"));
    e.anvil_vk_visible = "0";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES=0", "Vulkan is unavailable");
    e = env0(); e.anvil_vk_visible = "-1";
    CHECK(device_list_select(l, &e) == 0);
    e = env0(); e.backend = "vulkan";
    expect_error(l, &e, "ANVIL_BACKEND=vulkan", "libvulkan.so.1");
    device_list_free(l);
}

static void test_amd_dgpu_igpu(void) {
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon 780M (RADV GFX1103_R1)", 0x1002, DEV_TYPE_INTEGRATED, "radv", "Mesa 24.2.8",
                                  "0000:c5:00.0", 1, 30 * GiB, 28 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 7900 XTX (RADV NAVI31)", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8",
                                  "0000:03:00.0", 2, 24 * GiB, 23 * GiB);
    add_lavapipe();
    device_list *l = probe();
    CHECK(!strcmp(dev(l, "vulkan1")->desc, "AMD Radeon RX 7900 XTX / Mesa RADV 24.2.8"));
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0);
    CHECK(used(l, "vulkan1") && !used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_IGPU);
    CHECK(why_has(l, "vulkan0", "discrete GPU (vulkan1)") && fix_has(l, "vulkan0", "ANVIL_IGPU=1"));
    CHECK(skipped(l, "vulkan2") == DEV_SKIP_SOFTWARE);
    int idx[4];
    CHECK(device_list_used_gpus(l, idx, 4) == 1 && idx[0] == device_list_find(l, "vulkan1"));
    e.igpu = "1";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && used(l, "vulkan1"));
    CHECK(device_list_used_gpus(l, idx, 4) == 2);
    e = env0(); e.igpu = "0";
    CHECK(device_list_select(l, &e) == 0 && !used(l, "vulkan0") && used(l, "vulkan1"));
    e = env0(); e.device = "vulkan0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "vulkan1"));
    CHECK(why_has(l, "vulkan1", "ANVIL_DEVICE=vulkan0") && skipped(l, "vulkan1") == DEV_SKIP_ENV);
    e = env0(); e.anvil_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "vulkan1"));
    CHECK(why_has(l, "vulkan1", "not listed in ANVIL_VK_VISIBLE_DEVICES=0") && fix_has(l, "vulkan1", "add 1"));
    e = env0(); e.anvil_vk_visible = "0,1";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && used(l, "vulkan1") && !used(l, "vulkan2"));
    /* Without the discrete GPU the integrated one is used; ANVIL_IGPU=0 turns it off. */
    e = env0(); e.anvil_vk_visible = "0 2";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && used(l, "vulkan2"));
    n_fake_vk = 1;
    device_list_free(l);
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0"));
    e.igpu = "0";
    CHECK(device_list_select(l, &e) == 0 && !used(l, "vulkan0") && why_has(l, "vulkan0", "ANVIL_IGPU=0") && used(l, "cpu"));
    device_list_free(l);
    /* Two integrated GPUs, no discrete: only the first is used unless ANVIL_IGPU=1. */
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("iGPU A", 0x1002, DEV_TYPE_INTEGRATED, "radv", "Mesa 24.2.8", "0000:c5:00.0", 1, 8 * GiB, 8 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("iGPU B", 0x8086, DEV_TYPE_INTEGRATED, "Intel open-source Mesa driver", "Mesa 24.2.8", "0000:00:02.0", 2, 8 * GiB, 8 * GiB);
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && skipped(l, "vulkan1") == DEV_SKIP_EXTRA_IGPU);
    e.igpu = "1";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && used(l, "vulkan1"));
    device_list_free(l);
}

static void test_radv_amdvlk(void) {
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 6800 XT", 0x1002, DEV_TYPE_DISCRETE, "AMD open-source driver", "2023.Q3.3",
                                  "0000:0b:00.0", 7, 16 * GiB, 15 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 6800 XT (RADV NAVI21)", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 23.3.1",
                                  "0000:0b:00.0", 7, 16 * GiB, 15 * GiB);
    device_list *l = probe();
    CHECK(!strcmp(dev(l, "vulkan0")->desc, "AMD Radeon RX 6800 XT / AMDVLK 2023.Q3.3"));
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0);
    CHECK(used(l, "vulkan1") && !used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_DUPLICATE);
    CHECK(dev(l, "vulkan0")->duplicate_of == device_list_find(l, "vulkan1"));
    CHECK(why_has(l, "vulkan0", "same GPU as vulkan1") && why_has(l, "vulkan0", "Mesa RADV is preferred over AMDVLK"));
    CHECK(fix_has(l, "vulkan0", "ANVIL_DEVICE=vulkan0"));
    e.device = "vulkan0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "vulkan1"));
    e = env0(); e.anvil_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "vulkan1"));
    /* Listing both still uses the card once (RADV). */
    e = env0(); e.anvil_vk_visible = "0,1";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan1") && skipped(l, "vulkan0") == DEV_SKIP_DUPLICATE);
    device_list_free(l);
    /* Matched by UUID alone (no PCI bus info); a different UUID is another card. */
    fake_vk[0].has_pci = fake_vk[1].has_pci = false;
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan1") && skipped(l, "vulkan0") == DEV_SKIP_DUPLICATE);
    device_list_free(l);
    fake_vk[0].uuid[0] = 8;
    l = probe();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && used(l, "vulkan1"));
    device_list_free(l);
    /* AMDVLK is preferred over the AMD proprietary driver. */
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("Radeon", 0x1002, DEV_TYPE_DISCRETE, "AMD proprietary driver", "24.10", "0000:0b:00.0", 7, 16 * GiB, 15 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("Radeon", 0x1002, DEV_TYPE_DISCRETE, "AMD open-source driver", "2023.Q3.3", "0000:0b:00.0", 7, 16 * GiB, 15 * GiB);
    l = probe();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan1") && !used(l, "vulkan0"));
    device_list_free(l);
}

static void add_navi31_pair(const char *gfx) {
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 7900 XTX (RADV NAVI31)", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8",
                                  "0000:03:00.0", 2, 24 * GiB, 23 * GiB);
    fake_hip[n_fake_hip++] = hip_dev("AMD Radeon RX 7900 XTX", gfx, "0000:03:00.0", "GPU-aaaaaaaaaaaaaaaa", DEV_TYPE_DISCRETE, 24 * GiB);
}

static void test_vulkan_and_hip(void) {
    reset_fakes();
    add_navi31_pair("gfx1100");
    device_list *l = probe();
    CHECK(l->n == 3 && l->hip_count == 1);
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0);
    CHECK(used(l, "hip0") && !used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_DUPLICATE);
    CHECK(why_has(l, "vulkan0", "same GPU as hip0") && why_has(l, "vulkan0", "HIP is preferred for gfx1100"));
    e.backend = "vulkan";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "hip0") && why_has(l, "hip0", "ANVIL_BACKEND=vulkan"));
    e = env0(); e.backend = "hip";
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0") && !used(l, "vulkan0"));
    e = env0(); e.anvil_vk_visible = "0"; /* an explicit Vulkan pick wins the dedup */
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && skipped(l, "hip0") == DEV_SKIP_DUPLICATE);
    e = env0(); e.device = "vulkan0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "hip0"));
    e = env0(); e.device = "hip0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0") && !used(l, "vulkan0"));
    e = env0(); e.device = "hip1";
    expect_error(l, &e, "ANVIL_DEVICE=hip1", "hip0");
    device_list_free(l);

    /* gfx target not in the HIP build: Vulkan runs the card; the HIP copy says why. */
    fake_targets = "gfx1030";
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "hip0"));
    CHECK(skipped(l, "hip0") == DEV_SKIP_HIP_TARGET && why_has(l, "hip0", "gfx1100 is not in this HIP build (targets: gfx1030)"));
    CHECK(why_has(l, "hip0", "runs through vulkan0") && fix_has(l, "hip0", "Vulkan backend"));
    CHECK(!fix_has(l, "hip0", "HSA_OVERRIDE_GFX_VERSION")); /* no gfx110x sibling in the build */
    e.backend = "hip";
    expect_error(l, &e, "ANVIL_BACKEND=hip", "gfx1100 is not in this HIP build");
    e = env0(); e.device = "hip0";
    expect_error(l, &e, "ANVIL_DEVICE=hip0", "not in this HIP build");
    device_list_free(l);
    /* A generic target covers the card. */
    fake_targets = "gfx1030,gfx11-generic";
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0"));
    device_list_free(l);

    /* gfx1031 with a gfx1030 build: HSA_OVERRIDE_GFX_VERSION suggested on Linux only. */
    reset_fakes();
    fake_targets = "gfx1030,gfx1100";
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 6700 XT (RADV NAVI22)", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8",
                                  "0000:0a:00.0", 3, 12 * GiB, 11 * GiB);
    fake_hip[n_fake_hip++] = hip_dev("AMD Radeon RX 6700 XT", "gfx1031", "0000:0a:00.0", "GPU-bbbbbbbbbbbbbbbb", DEV_TYPE_DISCRETE, 12 * GiB);
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && skipped(l, "hip0") == DEV_SKIP_HIP_TARGET);
    CHECK(fix_has(l, "hip0", "HSA_OVERRIDE_GFX_VERSION=10.3.0"));
    e.os = DEV_OS_WINDOWS;
    CHECK(device_list_select(l, &e) == 0 && !fix_has(l, "hip0", "HSA_OVERRIDE_GFX_VERSION"));
    e = env0(); e.hsa_override = "10.3.0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0") && !used(l, "vulkan0"));
    CHECK(!strcmp(dev(l, "hip0")->effective_gfx, "gfx1030"));
    e.os = DEV_OS_WINDOWS; /* ignored on Windows, with a note */
    CHECK(device_list_select(l, &e) == 0 && !used(l, "hip0") && note_has(l, "no effect outside Linux"));
    e = env0(); e.hsa_override = "10.3";
    expect_error(l, &e, "HSA_OVERRIDE_GFX_VERSION=10.3", "10.3.0");
    e = env0(); e.hsa_override = "ten";
    expect_error(l, &e, "HSA_OVERRIDE_GFX_VERSION=ten", NULL);
    e = env0(); e.hsa_override = "11.0.0"; /* a wrong override is the user's call, but it is reported */
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0") && !strcmp(dev(l, "hip0")->effective_gfx, "gfx1100"));
    device_list_free(l);
}

static void test_hip_visibility(void) {
    reset_fakes();
    add_navi31_pair("gfx1100"); /* physical HIP 0 = 03:00.0 */
    fake_vk[n_fake_vk++] = vk_dev("AMD Radeon RX 6800 (RADV NAVI21)", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8",
                                  "0000:0a:00.0", 3, 16 * GiB, 15 * GiB);
    fake_hip[n_fake_hip++] = hip_dev("AMD Radeon RX 6800", "gfx1030", "0000:0a:00.0", "GPU-cccccccccccccccc", DEV_TYPE_DISCRETE, 16 * GiB);
    device_list *l = probe();
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "hip0") && used(l, "hip1") && !used(l, "vulkan0") && !used(l, "vulkan1"));
    /* HIP_VISIBLE_DEVICES=1: physical 1 becomes hip0, physical 0 is hidden and its Vulkan copy is used. */
    e.hip_visible = "1";
    CHECK(device_list_select(l, &e) == 0);
    CHECK(used(l, "hip0") && !strcmp(dev(l, "hip0")->gfx_target, "gfx1030") && dev(l, "hip1") == NULL);
    CHECK(used(l, "vulkan0") && !used(l, "vulkan1"));
    const dev_info *hidden = NULL;
    for (int i = 0; i < l->n; i++) if (!strcmp(l->dev[i].id, "-")) hidden = &l->dev[i];
    CHECK(hidden && hidden->skip == DEV_SKIP_ENV && strstr(hidden->why, "HIP_VISIBLE_DEVICES=1"));
    e = env0(); e.cuda_visible = "1";
    CHECK(device_list_select(l, &e) == 0 && !strcmp(dev(l, "hip0")->gfx_target, "gfx1030") && used(l, "vulkan0"));
    e = env0(); e.cuda_visible = "1"; e.hip_visible = "0"; /* HIP wins */
    CHECK(device_list_select(l, &e) == 0 && !strcmp(dev(l, "hip0")->gfx_target, "gfx1100") && note_has(l, "CUDA_VISIBLE_DEVICES is ignored"));
    e = env0(); e.hip_visible = "1,0"; /* order defines the ordinals */
    CHECK(device_list_select(l, &e) == 0 && !strcmp(dev(l, "hip0")->gfx_target, "gfx1030") && !strcmp(dev(l, "hip1")->gfx_target, "gfx1100"));
    e = env0(); e.rocr_visible = "GPU-cccccccccccccccc";
    CHECK(device_list_select(l, &e) == 0 && !strcmp(dev(l, "hip0")->gfx_target, "gfx1030") && dev(l, "hip1") == NULL);
    CHECK(hidden && strstr(hidden->why, "ROCR_VISIBLE_DEVICES=GPU-cccccccccccccccc"));
    e = env0(); e.rocr_visible = "1,0"; e.hip_visible = "1"; /* HIP indexes what ROCR left */
    CHECK(device_list_select(l, &e) == 0 && !strcmp(dev(l, "hip0")->gfx_target, "gfx1100"));
    e = env0(); e.hip_visible = "-1";
    CHECK(device_list_select(l, &e) == 0 && dev(l, "hip0") == NULL && used(l, "vulkan0") && used(l, "vulkan1"));
    e = env0(); e.hip_visible = "2";
    expect_error(l, &e, "HIP_VISIBLE_DEVICES=2", "no HIP device 2");
    e = env0(); e.rocr_visible = "1"; e.hip_visible = "1";
    expect_error(l, &e, "HIP_VISIBLE_DEVICES=1", "after ROCR_VISIBLE_DEVICES");
    e = env0(); e.cuda_visible = "a";
    expect_error(l, &e, "CUDA_VISIBLE_DEVICES=a", "not a device index");
    e = env0(); e.hip_visible = "GPU-cccccccccccccccc"; /* UUIDs only in ROCR_VISIBLE_DEVICES */
    expect_error(l, &e, "HIP_VISIBLE_DEVICES", NULL);
    e = env0(); e.rocr_visible = "GPU-dddddddddddddddd";
    expect_error(l, &e, "ROCR_VISIBLE_DEVICES", "no GPU has UUID");
    e = env0(); e.rocr_visible = "5";
    expect_error(l, &e, "ROCR_VISIBLE_DEVICES=5", "no GPU 5");
    e = env0(); e.rocr_visible = "0,GPU-aaaaaaaaaaaaaaaa";
    expect_error(l, &e, "ROCR_VISIBLE_DEVICES", "twice");
    device_list_free(l);
    /* A runtime that applies the variables itself: validated and reported, not applied again. */
    fake_runtime_applies = true;
    l = probe();
    e = env0(); e.hip_visible = "1";
    CHECK(device_list_select(l, &e) == 0 && dev(l, "hip0") && dev(l, "hip1") && note_has(l, "applied by the ROCm runtime"));
    e.hip_visible = "x";
    expect_error(l, &e, "HIP_VISIBLE_DEVICES=x", NULL);
    device_list_free(l);
}

static void test_nvidia_intel(void) {
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("Intel(R) UHD Graphics 770 (ADL-S GT1)", 0x8086, DEV_TYPE_INTEGRATED, "Intel open-source Mesa driver",
                                  "Mesa 24.2.8", "0000:00:02.0", 4, 31 * GiB, 30 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("NVIDIA GeForce RTX 4090", 0x10de, DEV_TYPE_DISCRETE, "NVIDIA", "550.54.14",
                                  "0000:01:00.0", 5, 24 * GiB, 22 * GiB);
    device_list *l = probe();
    CHECK(!strcmp(dev(l, "vulkan1")->desc, "NVIDIA GeForce RTX 4090 / NVIDIA 550.54.14"));
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan1") && !used(l, "vulkan0"));
    CHECK(why_has(l, "vulkan0", "integrated GPU while a discrete GPU (vulkan1)"));
    /* More free memory on the iGPU does not make it win (ollama #16667). */
    CHECK(dev(l, "vulkan0")->mem_free > dev(l, "vulkan1")->mem_free);
    e.device = "vulkan0";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan0") && !used(l, "vulkan1"));
    device_list_free(l);
}

static void test_unsupported_and_virtual(void) {
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("Old GPU", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 20.0", "0000:05:00.0", 9, 2 * GiB, 2 * GiB);
    fake_vk[0].supported = false;
    snprintf(fake_vk[0].unsupported_why, sizeof fake_vk[0].unsupported_why, "Vulkan 1.1 (1.2 needed)");
    fake_vk[n_fake_vk++] = vk_dev("Virtio-GPU Venus", 0x1af4, DEV_TYPE_VIRTUAL, "venus", "Mesa 24.0", NULL, 10, 4 * GiB, 4 * GiB);
    device_list *l = probe();
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0 && !used(l, "vulkan0") && skipped(l, "vulkan0") == DEV_SKIP_UNSUPPORTED);
    CHECK(why_has(l, "vulkan0", "Vulkan 1.1") && skipped(l, "vulkan1") == DEV_SKIP_VIRTUAL && used(l, "cpu"));
    e.anvil_vk_visible = "0";
    expect_error(l, &e, "ANVIL_VK_VISIBLE_DEVICES=0", "Vulkan 1.1");
    e = env0(); e.device = "vulkan0";
    expect_error(l, &e, "ANVIL_DEVICE=vulkan0", "cannot be used");
    e = env0(); e.device = "vulkan1";
    CHECK(device_list_select(l, &e) == 0 && used(l, "vulkan1"));
    device_list_free(l);
}

static void test_env_from_process(void) {
    setenv("ANVIL_VK_VISIBLE_DEVICES", "0,2", 1);
    setenv("GGML_VK_VISIBLE_DEVICES", "", 1);
    setenv("HIP_VISIBLE_DEVICES", "1", 1);
    setenv("ROCR_VISIBLE_DEVICES", "GPU-x", 1);
    setenv("CUDA_VISIBLE_DEVICES", "3", 1);
    setenv("ANVIL_BACKEND", "vulkan", 1);
    setenv("ANVIL_DEVICE", "vulkan2", 1);
    setenv("ANVIL_IGPU", "1", 1);
    setenv("HSA_OVERRIDE_GFX_VERSION", "10.3.0", 1);
    device_env e;
    device_env_from_process(&e);
    CHECK(e.anvil_vk_visible && !strcmp(e.anvil_vk_visible, "0,2") && e.ggml_vk_visible == NULL);
    CHECK(e.hip_visible && !strcmp(e.hip_visible, "1") && e.rocr_visible && !strcmp(e.rocr_visible, "GPU-x"));
    CHECK(e.cuda_visible && !strcmp(e.cuda_visible, "3") && e.backend && !strcmp(e.backend, "vulkan"));
    CHECK(e.device && !strcmp(e.device, "vulkan2") && e.igpu && !strcmp(e.igpu, "1"));
    CHECK(e.hsa_override && !strcmp(e.hsa_override, "10.3.0") && e.os == DEV_OS_LINUX);
    const char *vars[] = {"ANVIL_VK_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                          "CUDA_VISIBLE_DEVICES", "ANVIL_BACKEND", "ANVIL_DEVICE", "ANVIL_IGPU", "HSA_OVERRIDE_GFX_VERSION"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    device_env_from_process(&e);
    CHECK(!e.anvil_vk_visible && !e.backend && !e.device && !e.igpu && !e.hip_visible);
}

static void test_hip_targets(void) {
    CHECK(hip_target_in_build("gfx1100", "gfx1030,gfx1100"));
    CHECK(!hip_target_in_build("gfx1101", "gfx1030,gfx1100"));
    CHECK(hip_target_in_build("gfx1101", "gfx1030;gfx11-generic"));
    CHECK(hip_target_in_build("gfx1035", "gfx10-3-generic"));
    CHECK(!hip_target_in_build("gfx1010", "gfx10-3-generic"));
    CHECK(hip_target_in_build("gfx90a:sramecc+:xnack-", "gfx90a:xnack-"));
    CHECK(!hip_target_in_build("gfx90a:sramecc+:xnack+", "gfx90a:xnack-"));
    CHECK(hip_target_in_build("gfx90a:xnack+", "gfx90a"));
    CHECK(!hip_target_in_build("", "gfx1030") && !hip_target_in_build("gfx1030", ""));
    char g[32];
    CHECK(hip_gfx_from_version("10.3.0", g, sizeof g) == 0 && !strcmp(g, "gfx1030"));
    CHECK(hip_gfx_from_version("9.0.10", g, sizeof g) == 0 && !strcmp(g, "gfx90a"));
    CHECK(hip_gfx_from_version("11.0.0", g, sizeof g) == 0 && !strcmp(g, "gfx1100"));
    CHECK(hip_gfx_from_version("10.3", g, sizeof g) == -1);
    CHECK(hip_gfx_from_version("10.3.0.1", g, sizeof g) == -1);
    CHECK(hip_gfx_from_version("10.16.0", g, sizeof g) == -1);
    CHECK(hip_gfx_from_version("a.b.c", g, sizeof g) == -1);
    CHECK(hip_gfx_from_version("", g, sizeof g) == -1);
    CHECK(hip_override_suggestion("gfx1031", "gfx1030,gfx1100", g, sizeof g) && !strcmp(g, "10.3.0"));
    CHECK(hip_override_suggestion("gfx1103", "gfx1030,gfx1100", g, sizeof g) && !strcmp(g, "11.0.0"));
    CHECK(!hip_override_suggestion("gfx1100", "gfx1030,gfx1100", g, sizeof g)); /* already in the build */
    CHECK(!hip_override_suggestion("gfx906", "gfx1030,gfx1100", g, sizeof g));
}

static void test_split_parse(void) {
    float w[4];
    CHECK(device_parse_split("--tensor-split", "3,1", w, 4) == 2 && w[0] == 3 && w[1] == 1);
    CHECK(device_parse_split("--tensor-split", "0.75 0.25", w, 4) == 2 && w[1] == 0.25f);
    CHECK(device_parse_split("--tensor-split", "1/1/2", w, 4) == 3 && w[2] == 2);
    CHECK(device_parse_split("--tensor-split", "0,0", w, 4) == -1 && err_has("all zero"));
    CHECK(device_parse_split("--tensor-split", "1,-1", w, 4) == -1 && err_has("--tensor-split"));
    CHECK(device_parse_split("--tensor-split", "1,x", w, 4) == -1 && err_has("'x'"));
    CHECK(device_parse_split("--tensor-split", "1,2,3,4,5", w, 4) == -1);
    CHECK(device_parse_split("--tensor-split", "", w, 4) == -1);
    CHECK(device_parse_split("--tensor-split", "nan", w, 4) == -1);
}

/* ---- placement ---- */

static bool plan_covers(const device_plan *p, int n_layer) {
    int next = 0;
    for (int i = 0; i < p->n_entries; i++) {
        if (p->entries[i].layer_end == p->entries[i].layer_begin) continue;
        if (p->entries[i].layer_begin != next) return false;
        next = p->entries[i].layer_end;
    }
    return next == n_layer;
}
static bool plan_note_has(const device_plan *p, const char *s) {
    for (int i = 0; i < p->n_notes; i++) if (strstr(p->notes[i], s)) return true;
    return false;
}

static void test_plan(void) {
    enum { NL = 32 };
    uint64_t wb[NL], kv[NL];
    for (int i = 0; i < NL; i++) { wb[i] = 100 * MiB; kv[i] = 0; }
    device_plan_request r = {.n_layer = NL, .layer_weight_bytes = wb, .layer_kv_bytes = kv, .n_gpu_layers = -1, .reserve_bytes = 0};
    device_plan p;

    /* Two discrete GPUs, 12 GiB and 4 GiB free: 24 / 8 layers. */
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("Big", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8", "0000:03:00.0", 1, 16 * GiB, 12 * GiB);
    fake_vk[n_fake_vk++] = vk_dev("Small", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8", "0000:04:00.0", 2, 8 * GiB, 4 * GiB);
    add_lavapipe();
    device_list *l = probe();
    device_env e = env0();
    CHECK(device_list_select(l, &e) == 0);
    CHECK(device_plan_make(l, &r, &p) == 0);
    CHECK(p.n_gpu_layers == NL && p.n_entries == 2 && plan_covers(&p, NL));
    CHECKF(p.entries[0].device == device_list_find(l, "vulkan0") && p.entries[0].layer_end == 24, "end %d", p.entries[0].layer_end);
    CHECK(p.entries[1].device == device_list_find(l, "vulkan1") && p.entries[1].has_output && !p.entries[0].has_output);
    CHECK(device_plan_layer_entry(&p, 0) == 0 && device_plan_layer_entry(&p, 31) == 1 && device_plan_layer_entry(&p, 32) == -1);
    CHECK(plan_note_has(&p, "vulkan2 (llvmpipe / Mesa lavapipe 22.3.6): not used: software rasteriser"));
    CHECK(plan_note_has(&p, "fix: ANVIL_VK_VISIBLE_DEVICES=2"));
    /* The reserve and scratch are taken off free memory before splitting: (12-2) : (4-2) = 5 : 1. */
    r.reserve_bytes = 1 * GiB; r.compute_bytes = 1 * GiB;
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers == NL);
    CHECKF(p.entries[0].layer_end == 27 && p.entries[1].compute_bytes == 1 * GiB, "end %d", p.entries[0].layer_end);
    r.reserve_bytes = 0; r.compute_bytes = 0;
    /* --tensor-split overrides. */
    r.tensor_split = "1,1";
    CHECK(device_plan_make(l, &r, &p) == 0 && p.entries[0].layer_end == 16 && plan_covers(&p, NL));
    r.tensor_split = "1,3";
    CHECK(device_plan_make(l, &r, &p) == 0 && p.entries[0].layer_end == 8 && p.entries[1].layer_begin == 8);
    r.tensor_split = "0,1";
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_entries == 1 && p.entries[0].device == device_list_find(l, "vulkan1"));
    CHECK(plan_note_has(&p, "vulkan0") && plan_note_has(&p, "--tensor-split gives it no layers"));
    r.tensor_split = "1";
    CHECK(device_plan_make(l, &r, &p) == -1 && err_has("--tensor-split=1: 1 values for 2 GPUs in use (vulkan0, vulkan1)"));
    r.tensor_split = "1,a";
    CHECK(device_plan_make(l, &r, &p) == -1 && err_has("--tensor-split"));
    /* A split that overfills the small GPU fits fewer layers in auto mode, errors with -ngl N. */
    for (int i = 0; i < NL; i++) wb[i] = 200 * MiB;
    r.tensor_split = "1,15";
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers < NL && plan_covers(&p, NL));
    CHECKF(p.entries[0].device == device_list_find(l, "cpu"), "first entry %d", p.entries[0].device);
    r.n_gpu_layers = NL;
    CHECK(device_plan_make(l, &r, &p) == -1 && err_has("-ngl 32") && err_has("vulkan1"));
    for (int i = 0; i < NL; i++) wb[i] = 100 * MiB;
    r.tensor_split = NULL;
    r.n_gpu_layers = 0;
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers == 0 && p.n_entries == 1 && p.entries[0].has_output);
    CHECK(plan_note_has(&p, "-ngl 0 keeps every layer on the CPU"));
    /* -ngl above the layer count means every layer (llama.cpp's -ngl 99) */
    r.n_gpu_layers = 99;
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers == NL && plan_covers(&p, NL));
    r.n_gpu_layers = -2;
    CHECK(device_plan_make(l, &r, &p) == -1);
    r.n_gpu_layers = -1;
    device_list_free(l);

    /* One GPU with 1 GiB free: as many layers as fit (the last ones, with the head). */
    reset_fakes();
    fake_vk[n_fake_vk++] = vk_dev("Tiny", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa 24.2.8", "0000:03:00.0", 1, 2 * GiB, 1 * GiB);
    l = probe();
    CHECK(device_list_select(l, &e) == 0);
    r.output_bytes = 200 * MiB;
    r.cpu_bytes = 300 * MiB;
    CHECK(device_plan_make(l, &r, &p) == 0);
    CHECKF(p.n_gpu_layers == 8 && p.n_entries == 2, "gpu layers %d", p.n_gpu_layers);
    CHECK(p.entries[0].device == device_list_find(l, "cpu") && p.entries[0].layer_end == 24 && !p.entries[0].has_output);
    CHECK(p.entries[0].weight_bytes == 24 * 100 * MiB + 300 * MiB);
    CHECK(p.entries[1].layer_begin == 24 && p.entries[1].has_output && p.entries[1].weight_bytes == 1000 * MiB);
    CHECK(plan_note_has(&p, "only 8 of 32 layers fit on the GPU; layers 0-23 run on the CPU"));
    CHECK(strstr(p.entries[0].line, "layers 0-23 + embeddings") != NULL);
    /* Default reserve (256 MiB) leaves room for fewer. */
    r.reserve_bytes = -1;
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers == 5);
    r.reserve_bytes = 0;
    /* Nothing fits: every layer on the CPU, and the log says why the GPU holds nothing. */
    r.output_bytes = 2 * GiB;
    CHECK(device_plan_make(l, &r, &p) == 0 && p.n_gpu_layers == 0 && plan_note_has(&p, "not even one layer fits"));
    r.output_bytes = 0;
    r.cpu_bytes = 0;
    device_list_free(l);

    /* The log line format, on lavapipe picked explicitly. */
    reset_fakes();
    add_lavapipe();
    l = probe();
    e = env0(); e.anvil_vk_visible = "0";
    CHECK(device_list_select(l, &e) == 0);
    uint64_t w18[18], kv18[18];
    for (int i = 0; i < 18; i++) { w18[i] = 9 * MiB; kv18[i] = 1 * MiB; }
    device_plan_request r18 = {.n_layer = 18, .layer_weight_bytes = w18, .layer_kv_bytes = kv18, .n_gpu_layers = -1, .reserve_bytes = 0};
    CHECK(device_plan_make(l, &r18, &p) == 0 && p.n_entries == 1);
    CHECKF(!strcmp(p.entries[0].line, "vulkan0 (llvmpipe / Mesa lavapipe 22.3.6): layers 0-17 + output, 162 MiB weights, 18 MiB KV"),
           "line: %s", p.entries[0].line);
    device_list_free(l);

    /* No GPU in use and -ngl N: everything on the CPU, said out loud. */
    reset_fakes();
    add_lavapipe();
    l = probe();
    e = env0();
    CHECK(device_list_select(l, &e) == 0);
    r18.n_gpu_layers = 5;
    CHECK(device_plan_make(l, &r18, &p) == 0 && p.n_gpu_layers == 0 && p.n_entries == 1);
    {   /* "cpu (<model name, which may hold parentheses: Intel(R)> / <isa>): ..." */
        static const char tail[] = "): layers 0-17 + output, 162 MiB weights, 18 MiB KV";
        const char *ln = p.entries[0].line;
        const size_t n = strlen(ln), nt = sizeof tail - 1;
        CHECKF(!strncmp(ln, "cpu (", 5) && n > nt && !strcmp(ln + n - nt, tail), "line: %s", ln);
    }
    CHECK(plan_note_has(&p, "-ngl 5 asks for GPU layers, but no GPU is in use") && plan_note_has(&p, "vulkan0 (llvmpipe"));
    device_list_free(l);
    device_list unselected;
    memset(&unselected, 0, sizeof unselected);
    CHECK(device_plan_make(&unselected, &r18, &p) == -1);
}

static void test_format(void) {
    char b[32];
    dev_format_bytes(162 * MiB, b, sizeof b);
    CHECK(!strcmp(b, "162 MiB"));
    dev_format_bytes(7 * GiB + GiB / 2, b, sizeof b);
    CHECK(!strcmp(b, "7.5 GiB"));
    dev_format_bytes(24 * GiB, b, sizeof b);
    CHECK(!strcmp(b, "24 GiB"));
    CHECK(!strcmp(dev_type_name(DEV_TYPE_SOFTWARE), "software") && !strcmp(dev_backend_name(DEV_BACKEND_HIP), "hip"));
    dev_info d = vk_dev("x", 0x1002, DEV_TYPE_DISCRETE, "radv", "Mesa", NULL, 1, GiB, GiB);
    d.int8_dot = true;
    d.backend = DEV_BACKEND_VULKAN;
    dev_format_features(&d, b, sizeof b);
    CHECKF(!strcmp(b, "fp16 int8dot sg64"), "features '%s'", b);
}

/* Ollama's default context tiers by GPU memory (4k; 32k from 24 GiB; 256k from 48 GiB), capped at
 * the trained context; no GPU: the plain default. */
static void test_default_ctx_tiers(void) {
    const uint64_t gib = 1ull << 30;
    model_hparams hp = {.n_ctx_train = 131072};
    CHECK(model_default_ctx_for_gpu(&hp, 0) == 4096);
    CHECK(model_default_ctx_for_gpu(&hp, 16 * gib) == 4096);
    CHECK(model_default_ctx_for_gpu(&hp, 24 * gib - 1) == 4096);
    CHECK(model_default_ctx_for_gpu(&hp, 24 * gib) == 32768);
    CHECK(model_default_ctx_for_gpu(&hp, 48 * gib) == 131072);   /* 256k, capped at the model's */
    hp.n_ctx_train = 1u << 20;
    CHECK(model_default_ctx_for_gpu(&hp, 96 * gib) == 262144);
    hp.n_ctx_train = 2048;
    CHECK(model_default_ctx_for_gpu(&hp, 32 * gib) == 2048 && model_default_ctx(&hp) == 2048);
}

int main(void) {
    anv_log_enabled = 0;
    test_default_ctx_tiers();
    test_only_lavapipe();
    test_vulkan_unavailable();
    test_amd_dgpu_igpu();
    test_radv_amdvlk();
    test_vulkan_and_hip();
    test_hip_visibility();
    test_nvidia_intel();
    test_unsupported_and_virtual();
    test_env_from_process();
    test_hip_targets();
    test_split_parse();
    test_plan();
    test_format();
    device_registry_reset();
    return tu_finish();
}
