/* test_doctor: the `anvil doctor` checks on synthetic facts (no loader, loader without an
 * ICD, ICD variable pointing nowhere, only a software device, a GPU skipped by policy, a
 * gfx target outside the HIP build on Linux and Windows, ROCm missing, /dev/dri not
 * accessible, a bad variable), plus the ICD scan of this process's environment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "doctor.h"
#include "error.h"
#include "testutil.h"

static doctor_finding found[DOCTOR_MAX_FINDINGS];
static int n_found;

static void run(const doctor_facts *f) { n_found = doctor_check(f, found, DOCTOR_MAX_FINDINGS); }

/* The first finding whose title contains s (and, if lvl >= 0, has that level). */
static const doctor_finding *find(const char *s, int lvl) {
    for (int i = 0; i < n_found; i++)
        if (strstr(found[i].title, s) && (lvl < 0 || (int)found[i].level == lvl)) return &found[i];
    return NULL;
}
static bool any_text(const char *s) {
    for (int i = 0; i < n_found; i++)
        if (strstr(found[i].title, s) || strstr(found[i].explain, s) || strstr(found[i].fix, s)) return true;
    return false;
}
static int count_level(doctor_level l) {
    int n = 0;
    for (int i = 0; i < n_found; i++) n += found[i].level == l;
    return n;
}

static dev_info mk(dev_backend_kind b, int idx, const char *name, dev_type t) {
    dev_info d;
    memset(&d, 0, sizeof d);
    d.backend = b;
    d.backend_index = idx;
    d.type = t;
    d.duplicate_of = -1;
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.desc, sizeof d.desc, "%s / driver", name);
    snprintf(d.id, sizeof d.id, "%s%d", b == DEV_BACKEND_VULKAN ? "vulkan" : b == DEV_BACKEND_HIP ? "hip" : "cpu", idx);
    if (b == DEV_BACKEND_CPU) snprintf(d.id, sizeof d.id, "cpu");
    d.supported = true;
    return d;
}

static device_list list;
static doctor_facts facts;

static void base_facts(void) {
    memset(&list, 0, sizeof list);
    list.vulkan_built = true;
    list.vk_count = 0;
    list.hip_count = -1;
    memset(&facts, 0, sizeof facts);
    facts.os = DEV_OS_LINUX;
    facts.vulkan_built = true;
    facts.loader_found = true;
    snprintf(facts.loader_name, sizeof facts.loader_name, "libvulkan.so.1");
    facts.n_icds = 1;
    snprintf(facts.icds[0].manifest, sizeof facts.icds[0].manifest, "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json");
    facts.icds[0].manifest_exists = true;
    facts.n_system_icds = 1;
    snprintf(facts.system_icd_example, sizeof facts.system_icd_example, "%s", facts.icds[0].manifest);
    facts.devices = &list;
    facts.dri_exists = true;
}

static void add_dev(dev_info d) { list.dev[list.n++] = d; }

static void test_no_loader(void) {
    base_facts();
    facts.loader_found = false;
    snprintf(facts.loader_error, sizeof facts.loader_error, "libvulkan.so.1: cannot open shared object file");
    list.vk_count = -1;
    snprintf(list.vk_why, sizeof list.vk_why, "libvulkan.so.1 not found");
    dev_info c = mk(DEV_BACKEND_CPU, 0, "CPU", DEV_TYPE_CPU);
    c.used = true;
    add_dev(c);
    run(&facts);
    const doctor_finding *f = find("No Vulkan loader", DOC_PROBLEM);
    CHECK(f != NULL);
    CHECK(f && strstr(f->fix, "apt install libvulkan1") && strstr(f->fix, "dnf install vulkan-loader") && strstr(f->fix, "pacman -S vulkan-icd-loader"));
    CHECK(!find("Vulkan does not work", -1)); /* not said twice */
    CHECK(find("CPU only", -1) != NULL);
    facts.os = DEV_OS_WINDOWS;
    run(&facts);
    f = find("No Vulkan loader", DOC_PROBLEM);
    CHECK(f && strstr(f->fix, "Adrenalin") && !strstr(f->fix, "apt"));
}

static void test_no_icd(void) {
    base_facts();
    facts.n_icds = 0;
    facts.n_system_icds = 0;
    facts.system_icd_example[0] = 0;
    list.vk_count = -1;
    run(&facts);
    const doctor_finding *f = find("no Vulkan driver (ICD) is installed", DOC_PROBLEM);
    CHECK(f && strstr(f->fix, "mesa-vulkan-drivers") && strstr(f->fix, "Fedora") && strstr(f->fix, "vulkan-radeon"));
    facts.os = DEV_OS_WINDOWS;
    run(&facts);
    f = find("no Vulkan driver (ICD) is installed", DOC_PROBLEM);
    CHECK(f && strstr(f->fix, "vendor's driver"));

    /* VK_ICD_FILENAMES naming a manifest that does not exist: the missing ICD is named. */
    base_facts();
    facts.icd_env_var = "VK_ICD_FILENAMES";
    snprintf(facts.icd_env_value, sizeof facts.icd_env_value, "/nonexistent.json");
    snprintf(facts.icds[0].manifest, sizeof facts.icds[0].manifest, "/nonexistent.json");
    facts.icds[0].manifest_exists = false;
    list.vk_count = -1;
    run(&facts);
    f = find("VK_ICD_FILENAMES=/nonexistent.json", DOC_PROBLEM);
    CHECK(f && strstr(f->explain, "Missing: /nonexistent.json") && strstr(f->fix, "unset VK_ICD_FILENAMES"));
    CHECK(f && strstr(f->fix, "radeon_icd.x86_64.json"));
    CHECK(!find("Vulkan does not work", -1));
    /* One of two present: a warning. */
    facts.n_icds = 2;
    facts.icds[1] = facts.icds[0];
    facts.icds[1].manifest_exists = true;
    run(&facts);
    CHECK(find("VK_ICD_FILENAMES", DOC_WARN) != NULL);
    /* A manifest whose library is gone. */
    base_facts();
    facts.icds[0].library_checked = true;
    facts.icds[0].library_exists = false;
    snprintf(facts.icds[0].library, sizeof facts.icds[0].library, "/usr/lib/libvulkan_radeon.so");
    run(&facts);
    f = find("names a library that is not installed", DOC_WARN);
    CHECK(f && strstr(f->explain, "/usr/lib/libvulkan_radeon.so"));
}

static void test_software_only(void) {
    base_facts();
    list.vk_count = 1;
    dev_info sw = mk(DEV_BACKEND_VULKAN, 0, "llvmpipe", DEV_TYPE_SOFTWARE);
    sw.skip = DEV_SKIP_SOFTWARE;
    add_dev(sw);
    dev_info c = mk(DEV_BACKEND_CPU, 0, "CPU", DEV_TYPE_CPU);
    c.used = true;
    add_dev(c);
    facts.dri_exists = false;
    run(&facts);
    const doctor_finding *f = find("only Vulkan device is a software rasteriser", DOC_WARN);
    CHECK(f && strstr(f->explain, "no /dev/dri") && strstr(f->fix, "ANVIL_VK_VISIBLE_DEVICES=0") && strstr(f->fix, "--device /dev/dri"));
    CHECK(find("CPU only", DOC_INFO) != NULL);
    CHECK(count_level(DOC_PROBLEM) == 0);
    /* The same with a GPU on PCI but no /dev/dri: the kernel driver is the problem. */
    facts.n_pci_gpus = 1;
    run(&facts);
    CHECK(find("GPU on PCI but no /dev/dri", DOC_PROBLEM) != NULL);
    /* /dev/dri present but not accessible: the render group. */
    facts.n_pci_gpus = 0;
    facts.dri_exists = true;
    facts.n_render_nodes = 1;
    facts.n_render_ok = 0;
    snprintf(facts.render_node, sizeof facts.render_node, "/dev/dri/renderD128");
    snprintf(facts.render_group, sizeof facts.render_group, "render");
    run(&facts);
    f = find("Cannot open /dev/dri/renderD128 (group render)", DOC_PROBLEM);
    CHECK(f && strstr(f->fix, "usermod -aG render,video"));
    facts.n_render_ok = 1;
    run(&facts);
    CHECK(!find("Cannot open", -1));
}

static void test_gpu_skipped(void) {
    base_facts();
    list.vk_count = 2;
    dev_info ig = mk(DEV_BACKEND_VULKAN, 0, "AMD Radeon 780M", DEV_TYPE_INTEGRATED);
    ig.vendor_id = 0x1002;
    ig.skip = DEV_SKIP_IGPU;
    snprintf(ig.why, sizeof ig.why, "integrated GPU while a discrete GPU (vulkan1) is used");
    snprintf(ig.fix, sizeof ig.fix, "ANVIL_IGPU=1 to use it as well");
    add_dev(ig);
    dev_info dg = mk(DEV_BACKEND_VULKAN, 1, "AMD Radeon RX 7900 XTX", DEV_TYPE_DISCRETE);
    dg.vendor_id = 0x1002;
    dg.used = true;
    add_dev(dg);
    dev_info c = mk(DEV_BACKEND_CPU, 0, "CPU", DEV_TYPE_CPU);
    c.skip = DEV_SKIP_CPU_FALLBACK;
    add_dev(c);
    run(&facts);
    const doctor_finding *f = find("vulkan0 (AMD Radeon 780M / driver) is not used: skipped by policy", DOC_WARN);
    CHECK(f && strstr(f->explain, "integrated GPU") && strstr(f->fix, "ANVIL_IGPU=1"));
    CHECK(find("Anvil will run on: vulkan1", DOC_OK) != NULL);
    CHECK(find("No HIP backend in this build", DOC_INFO) != NULL); /* an AMD GPU, no HIP: Vulkan covers it */
    /* Every GPU skipped (ANVIL_BACKEND=cpu): the CPU-only outcome is a warning. */
    list.dev[1].used = false;
    list.dev[1].skip = DEV_SKIP_ENV;
    snprintf(list.dev[1].why, sizeof list.dev[1].why, "ANVIL_BACKEND=cpu");
    snprintf(list.dev[1].fix, sizeof list.dev[1].fix, "unset ANVIL_BACKEND");
    list.dev[2].used = true;
    run(&facts);
    CHECK(find("vulkan1 (AMD Radeon RX 7900 XTX / driver) is not used: skipped by an environment variable", DOC_WARN) != NULL);
    CHECK(find("CPU only", DOC_WARN) != NULL && any_text("unset ANVIL_BACKEND"));
    /* A bad variable. */
    facts.select_rc = -1;
    snprintf(facts.select_error, sizeof facts.select_error, "ANVIL_IGPU=yes: expected 0 or 1");
    run(&facts);
    CHECK(find("Environment variable error: ANVIL_IGPU=yes", DOC_PROBLEM) != NULL);
    CHECK(!find("Anvil will run", -1));
}

static void test_hip(void) {
    base_facts();
    list.vk_count = 1;
    list.hip_built = true;
    list.hip_count = 1;
    snprintf(list.hip_targets, sizeof list.hip_targets, "gfx1030,gfx1100");
    dev_info v = mk(DEV_BACKEND_VULKAN, 0, "AMD Radeon RX 6700 XT", DEV_TYPE_DISCRETE);
    v.vendor_id = 0x1002;
    v.used = true;
    add_dev(v);
    dev_info h = mk(DEV_BACKEND_HIP, 0, "AMD Radeon RX 6700 XT", DEV_TYPE_DISCRETE);
    h.vendor_id = 0x1002;
    h.skip = DEV_SKIP_HIP_TARGET;
    h.duplicate_of = 0;
    snprintf(h.gfx_target, sizeof h.gfx_target, "gfx1031");
    snprintf(h.why, sizeof h.why, "gfx1031 is not in this HIP build (targets: gfx1030,gfx1100); this GPU runs through vulkan0 instead");
    snprintf(h.fix, sizeof h.fix, "the Vulkan backend runs this GPU without ROCm; or try HSA_OVERRIDE_GFX_VERSION=10.3.0 (not supported by AMD)");
    add_dev(h);
    dev_info c = mk(DEV_BACKEND_CPU, 0, "CPU", DEV_TYPE_CPU);
    add_dev(c);
    run(&facts);
    const doctor_finding *f = find("hip0 (AMD Radeon RX 6700 XT / driver) is not used: gfx target not in the HIP build", DOC_INFO);
    CHECK(f && strstr(f->explain, "gfx1031") && strstr(f->fix, "HSA_OVERRIDE_GFX_VERSION=10.3.0"));
    /* Windows: the override is not offered as working, and a set override is flagged. */
    facts.os = DEV_OS_WINDOWS;
    snprintf(list.dev[1].fix, sizeof list.dev[1].fix, "the Vulkan backend runs this GPU without ROCm");
    snprintf(facts.hsa_override, sizeof facts.hsa_override, "10.3.0");
    run(&facts);
    f = find("is not used: gfx target not in the HIP build", -1);
    CHECK(f && strstr(f->fix, "does not work on Windows"));
    CHECK(find("HSA_OVERRIDE_GFX_VERSION=10.3.0 has no effect here", DOC_WARN) != NULL);
    /* ROCm runtime missing. */
    facts.os = DEV_OS_LINUX;
    facts.hsa_override[0] = 0;
    list.hip_count = -1;
    snprintf(list.hip_why, sizeof list.hip_why, "libamdhip64.so not found");
    run(&facts);
    f = find("ROCm runtime not found: libamdhip64.so not found", DOC_WARN);
    CHECK(f && strstr(f->explain, "Vulkan backend needs no ROCm") && strstr(f->fix, "rocm"));
    /* /dev/kfd not accessible. */
    facts.kfd_exists = true;
    facts.kfd_ok = false;
    snprintf(facts.kfd_group, sizeof facts.kfd_group, "render");
    run(&facts);
    CHECK(find("Cannot open /dev/kfd", DOC_PROBLEM) != NULL);
}

/* Windows + an AMD GPU on Vulkan: the Adrenalin version, whether it is one of the versions
 * that crash other engines' cooperative-matrix kernels, the self-check as the fix; not on
 * Linux, not for a version-less driverInfo as if it had one. */
static void test_windows_amd_driver(void) {
    base_facts();
    facts.os = DEV_OS_WINDOWS;
    list.vk_count = 1;
    dev_info g = mk(DEV_BACKEND_VULKAN, 0, "AMD Radeon RX 9070 XT", DEV_TYPE_DISCRETE);
    g.vendor_id = 0x1002;
    g.used = true;
    snprintf(g.driver_info, sizeof g.driver_info, "26.5.2 (LLPC)");
    add_dev(g);
    add_dev(mk(DEV_BACKEND_CPU, 0, "CPU", DEV_TYPE_CPU));
    run(&facts);
    const doctor_finding *f = find("vulkan0 (AMD Radeon RX 9070 XT): AMD Adrenalin driver 26.5.2", DOC_INFO);
    CHECK(f && strstr(f->explain, "this driver is one of those versions") && strstr(f->explain, "no cooperative-matrix"));
    CHECK(f && strstr(f->fix, "anvil doctor --verify"));
    snprintf(list.dev[0].driver_info, sizeof list.dev[0].driver_info, "Adrenalin 25.12.1");
    run(&facts);
    f = find("AMD Adrenalin driver 25.12.1", DOC_INFO);
    CHECK(f && strstr(f->explain, "not this version"));
    snprintf(list.dev[0].driver_info, sizeof list.dev[0].driver_info, "LLPC");
    run(&facts);
    CHECK(find("AMD driver on Windows, version not reported (\"LLPC\")", DOC_INFO) != NULL);
    facts.os = DEV_OS_LINUX;
    run(&facts);
    CHECK(!find("AMD Adrenalin driver", -1) && !find("version not reported", -1));
}

static void test_scan_icds(void) {
    doctor_facts *f = calloc(1, sizeof *f);
    setenv("VK_ICD_FILENAMES", "/nonexistent.json", 1);
    unsetenv("VK_DRIVER_FILES");
    doctor_scan_icds(f);
    CHECK(f->icd_env_var && !strcmp(f->icd_env_var, "VK_ICD_FILENAMES"));
    CHECK(f->n_icds == 1 && !f->icds[0].manifest_exists && !strcmp(f->icds[0].manifest, "/nonexistent.json"));
    setenv("VK_DRIVER_FILES", "/also-missing.json:/nonexistent2.json", 1); /* wins over VK_ICD_FILENAMES */
    doctor_scan_icds(f);
    CHECK(f->icd_env_var && !strcmp(f->icd_env_var, "VK_DRIVER_FILES") && f->n_icds == 2);
    /* A manifest we write: library_path read, relative paths resolved against its folder. */
    char dir[] = "/tmp/anvil-doctor-XXXXXX";
    if (mkdtemp(dir)) {
        char man[256], lib[256];
        snprintf(man, sizeof man, "%s/test_icd.json", dir);
        snprintf(lib, sizeof lib, "%s/libfake.so", dir);
        FILE *fp = fopen(man, "w");
        if (fp) {
            fputs("{ \"file_format_version\": \"1.0.0\", \"ICD\": { \"library_path\": \"./libfake.so\", \"api_version\": \"1.3.0\" } }", fp);
            fclose(fp);
        }
        setenv("VK_DRIVER_FILES", dir, 1); /* a folder is scanned for *.json */
        doctor_scan_icds(f);
        CHECK(f->n_icds == 1 && f->icds[0].manifest_exists && !strcmp(f->icds[0].library, "./libfake.so"));
        CHECK(f->icds[0].library_checked && !f->icds[0].library_exists);
        fp = fopen(lib, "w");
        if (fp) fclose(fp);
        doctor_scan_icds(f);
        CHECK(f->n_icds == 1 && f->icds[0].library_exists);
        tu_tmpdir_done(dir); /* remove() leaves a folder on Windows */
    }
    unsetenv("VK_DRIVER_FILES");
    unsetenv("VK_ICD_FILENAMES");
    doctor_scan_icds(f);
    CHECK(f->icd_env_var == NULL);
    for (int i = 0; i < f->n_icds; i++) CHECK(f->icds[i].manifest_exists);
    free(f);
}

static void test_print(void) {
    base_facts();
    facts.loader_found = false;
    run(&facts);
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    if (!tmp) return;
    int problems = doctor_print(tmp, found, n_found);
    CHECK(problems == 1);
    rewind(tmp);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
    CHECK(strstr(buf, "[PROBLEM] No Vulkan loader") && strstr(buf, "Fix: Debian/Ubuntu") && strstr(buf, "1 problem, 0 warnings."));
}

int main(void) {
    anv_log_enabled = 0;
    test_no_loader();
    test_no_icd();
    test_software_only();
    test_gpu_skipped();
    test_hip();
    test_windows_amd_driver();
    test_scan_icds();
    test_print();
    return tu_finish();
}
