/* aco_pipestats: the AMD-compiler gate's harness. Creates every compute pipeline the Vulkan
 * backend can create (engine/vulkan's own table: vkp_describe, vkp_n_variants,
 * vkp_spec_constants, vkp_variant_name, the embedded SPIR-V), with the specialization constants
 * and required subgroup size Anvil uses, on RADV's null device for each AMD family asked for,
 * reads ACO's statistics (VK_KHR_pipeline_executable_properties) and fails on a spill, a
 * pipeline above its kernel class's VGPR budget (k_budgets below), or a compiler crash.
 * Each family runs in its own worker process (RADV_FORCE_FAMILY is per process); a worker that
 * dies is reported against the pipeline it was compiling and restarted after it. Families run
 * in parallel (--jobs). Results live in one shared mapping the workers write into. The
 * compile-time column counts Mesa shader-cache hits as ~0 (gate.sh keeps that cache).
 * Usage: aco_pipestats [--jobs N] [--tsv FILE] [--all-paths] [--only SUBSTR] FAMILY...
 *   (run inside tools/aco/make-root.sh's root, where RADV's null device exists; FAMILY is a
 *   Mesa 25.0 family name: navi21 navi31 navi33 phoenix gfx1151 gfx1201 ...)
 *   --all-paths also compiles the variants of the disabled paths (ANVIL_VK_DISABLE=subgroup /
 *   fp16: the non-"_sg" and non-"_f16" kernels), which RADV never creates by default.
 * The cooperative-matrix kernels ("_cm", engine/vulkan/vk_coopmat.c) are compiled only on a
 * family whose RADV advertises a configuration vk_coopmat_query accepts, with the constants and
 * subgroup size Anvil would use there (ACO aborts on WMMA for a family without matrix cores);
 * elsewhere they count as skipped.
 * Exit: 0 pass, 1 gate failed, 2 usage, 77 no RADV null device (the gate cannot run here). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "volk.h"
#include "vk_coopmat.h"
#include "vk_pipelines.h"
#include "vk_spirv.h"

/* VGPR budgets per kernel class (the most a pipeline of the class may use, wave64 on every
 * family; ACO reports VGPRs per lane). Why these numbers:
 * - mat-vec (mul_mat_vec*, the fused glu ones, the integer-dot mul_mat_vecq*): decode is memory
 *   bound; a SIMD hides DRAM latency with waves in flight. 128 VGPRs keeps >= 8 wave64 per SIMD
 *   on RDNA3 (1536 VGPRs/lane-slot per SIMD) and >= 4 on RDNA2; it is also where ACO starts
 *   trading registers for occupancy. ggml-vulkan's heavy kernels sit at 184-192 VGPRs; ours
 *   decode kernels need far fewer once registers no longer grow with the token count.
 * - mat-mat (mul_mm*): the tiled prompt kernel keeps a register tile by design; 128 as well
 *   (it needs 48-60 today), so a tile change that doubles it is seen.
 * - flash attention and everything else: 128. */
typedef struct { const char *prefix; const char *cls; unsigned budget; } budget_rule;
static const budget_rule k_budgets[] = {
    { "mul_mat_vec", "mat-vec", 128 }, /* also matches mul_mat_vecq and mul_mat_vec_glu */
    { "mul_mm", "mat-mat", 128 },
    { "flash_attn", "attention", 128 },
    { "", "other", 128 },
};
#define N_CLASSES (int)(sizeof k_budgets / sizeof k_budgets[0])

static int class_of(const char *name) {
    for (int i = 0; i < N_CLASSES; i++)
        if (!strncmp(name, k_budgets[i].prefix, strlen(k_budgets[i].prefix))) return i;
    return N_CLASSES - 1;
}

typedef struct {
    char name[80];           /* the SPIR-V variant, "@rRtT" for mat-vec ROWS x NTOK */
    const anv_spirv_blob *blob;
    uint32_t spec[VKP_MAX_SPEC], n_spec;
    bool cm;                 /* a coopmat kernel: constants and subgroup size from the family's configuration */
    int n_bind;
    bool arr0, subgroup;     /* binding 0 is an array of 2; created with the required subgroup size */
    uint32_t pc_size;
    int dup_of;              /* index of an identical earlier job (same SPIR-V, constants, size), or -1 */
} job;

enum { ST_PENDING = 0, ST_RUNNING, ST_OK, ST_FAILED, ST_CRASHED, ST_SKIPPED, ST_NO_COOPMAT /* family without the configuration */ };
typedef struct {
    int status;
    unsigned vgprs, sgprs, spill_v, spill_s, scratch, code, waves, wave, lds;
    double ms;
} result;

static job *g_jobs;
static int g_n_jobs;

static const anv_spirv_blob *find_blob(const char *name) {
    for (int i = 0; i < anv_spirv_count; i++)
        if (!strcmp(anv_spirv_blobs[i].name, name)) return &anv_spirv_blobs[i];
    return NULL;
}

static bool same_job(const job *a, const job *b) {
    return a->blob == b->blob && a->n_spec == b->n_spec && !memcmp(a->spec, b->spec, sizeof a->spec) && a->subgroup == b->subgroup &&
           a->n_bind == b->n_bind && a->arr0 == b->arr0 && a->pc_size == b->pc_size;
}

static bool add_job(const job *j) {
    job *n = realloc(g_jobs, (size_t)(g_n_jobs + 1) * sizeof *n);
    if (!n) return false;
    g_jobs = n;
    g_jobs[g_n_jobs] = *j;
    g_jobs[g_n_jobs].dup_of = -1;
    for (int i = 0; i < g_n_jobs; i++)
        if (same_job(&g_jobs[i], j)) { g_jobs[g_n_jobs].dup_of = i; break; }
    g_n_jobs++;
    return true;
}

/* Every pipeline of engine/vulkan's table; then each embedded SPIR-V module no description
 * reaches (created plainly, as vk_membw.c does), so nothing built in goes unchecked. */
static bool build_jobs(bool all_paths, const char *only) {
    bool *used = calloc((size_t)anv_spirv_count + 1, 1);
    if (!used) return false;
    for (int id = 0; id < VKP_COUNT; id++) {
        vkp_desc d;
        vkp_describe(id, &d);
        if (!d.name[0]) continue;
        for (int sg = d.has_sg ? 1 : 0; sg >= 0; sg--) {
            for (int f16 = d.has_f16 ? 1 : 0; f16 >= 0; f16--) {
                char base[72];
                vkp_variant_name(&d, sg, f16, base, sizeof base);
                const anv_spirv_blob *b = find_blob(base);
                if (b) used[b - anv_spirv_blobs] = true;
                if ((d.has_sg && !sg) || (d.has_f16 && !f16)) {
                    if (!all_paths) continue;
                }
                for (int v = 0; v < vkp_n_variants(&d); v++) {
                    job j = { .blob = b, .n_bind = d.n_bind, .arr0 = d.arr0, .pc_size = d.pc_size };
                    j.n_spec = vkp_spec_constants(&d, v, false, j.spec); /* RADV: a GPU */
                    j.cm = d.spec == VKP_SPEC_CM;
                    if (j.cm && !b) continue; /* built without glslang >= 15: no coopmat kernels to check */
                    j.subgroup = vkp_required_subgroup_size(&d, sg, 64) != 0; /* the size itself: the device's widest */
                    if (d.spec == VKP_SPEC_MV) snprintf(j.name, sizeof j.name, "%s@r%ut%u", base, j.spec[1], j.spec[2]);
                    else snprintf(j.name, sizeof j.name, "%s", base);
                    if (only && !strstr(j.name, only)) continue;
                    if (!b) { fprintf(stderr, "aco_pipestats: %s is described but its SPIR-V is not built in\n", base); free(used); return false; }
                    if (!add_job(&j)) { free(used); return false; }
                }
            }
        }
    }
    for (int i = 0; i < anv_spirv_count; i++) {
        if (used[i] || (only && !strstr(anv_spirv_blobs[i].name, only))) continue;
        job j = { .blob = &anv_spirv_blobs[i], .n_bind = 8, .pc_size = 128 };
        snprintf(j.name, sizeof j.name, "%s", anv_spirv_blobs[i].name);
        if (!add_job(&j)) { free(used); return false; }
    }
    free(used);
    return true;
}

/* ---- the worker: one family, one device, jobs from `start` on ---- */

typedef struct {
    VkInstance inst;
    VkPhysicalDevice pdev;
    VkDevice dev;
    uint32_t sg_max;
    bool sg_control;
    anv_vk_device_info cm;   /* vk_coopmat_query's verdict for this family (cm.coopmat) */
} gpu;

static int open_device(const char *family, gpu *g) {
    if (volkInitialize() != VK_SUCCESS) { fprintf(stderr, "%s: no Vulkan loader\n", family); return 77; }
    VkApplicationInfo ai = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "aco_pipestats", .apiVersion = VK_API_VERSION_1_3 };
    VkInstanceCreateInfo ii = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &ai };
    if (vkCreateInstance(&ii, NULL, &g->inst) != VK_SUCCESS) { fprintf(stderr, "%s: vkCreateInstance failed\n", family); return 77; }
    volkLoadInstance(g->inst);
    VkPhysicalDevice pd[8];
    uint32_t n = 8;
    vkEnumeratePhysicalDevices(g->inst, &n, pd);
    g->pdev = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pd[i], &p);
        if (p.vendorID == 0x1002) { g->pdev = pd[i]; break; }
    }
    if (!g->pdev) { fprintf(stderr, "%s: no AMD device (RADV's null device needs RADV_FORCE_FAMILY and Mesa 25.0's RADV)\n", family); return 77; }
    VkPhysicalDeviceSubgroupSizeControlProperties sc = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sc };
    vkGetPhysicalDeviceProperties2(g->pdev, &p2);
    /* every feature the device has, as queried (Anvil enables a subset of these) */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fx = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR };
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .pNext = &fx };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f13 };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12 };
    VkPhysicalDeviceFeatures2 f2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    vkGetPhysicalDeviceFeatures2(g->pdev, &f2);
    if (!fx.pipelineExecutableInfo) { fprintf(stderr, "%s: no VK_KHR_pipeline_executable_properties\n", family); return 77; }
    g->sg_control = f13.subgroupSizeControl && f13.computeFullSubgroups;
    g->sg_max = sc.maxSubgroupSize;
    memset(&g->cm, 0, sizeof g->cm); /* what vk_coopmat_query reads of vk_fill_device_info's answer */
    g->cm.api_version = p2.properties.apiVersion;
    g->cm.sg_size_control = g->sg_control && (sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    g->cm.subgroup_min = sc.minSubgroupSize;
    g->cm.subgroup_max = g->cm.subgroup_size = sc.maxSubgroupSize;
    g->cm.max_shared_memory = p2.properties.limits.maxComputeSharedMemorySize;
    vk_coopmat_query(g->inst, g->pdev, &g->cm);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = 0, .queueCount = 1, .pQueuePriorities = &prio };
    const char *ext[2] = { VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME };
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cmf = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
                                                         .cooperativeMatrix = VK_TRUE, .pNext = f2.pNext };
    if (g->cm.coopmat) f2.pNext = &cmf;
    VkDeviceCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi,
                              .enabledExtensionCount = g->cm.coopmat ? 2u : 1u, .ppEnabledExtensionNames = ext };
    if (vkCreateDevice(g->pdev, &di, NULL, &g->dev) != VK_SUCCESS) { fprintf(stderr, "%s: vkCreateDevice failed\n", family); return 77; }
    volkLoadDevice(g->dev);
    return 0;
}

static bool stat_is(const char *name, const char *want) { /* "Spilled VGPRs" == "spilled_vgprs" */
    for (; *name && *want; name++, want++) {
        char a = *name == ' ' ? '_' : *name, b = *want;
        if ((a | 32) != (b | 32)) return false;
    }
    return !*name && !*want;
}

static unsigned stat_u(const VkPipelineExecutableStatisticKHR *s) {
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return (unsigned)s->value.u64;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return (unsigned)s->value.i64;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return (unsigned)s->value.f64;
    default: return 0;
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void compile_one(const gpu *g, const job *j, result *r) {
    VkDescriptorSetLayoutBinding b[8];
    for (int i = 0; i < j->n_bind; i++)
        b[i] = (VkDescriptorSetLayoutBinding){ .binding = (uint32_t)i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .descriptorCount = i == 0 && j->arr0 ? 2u : 1u, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
    VkDescriptorSetLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = (uint32_t)j->n_bind, .pBindings = b };
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkShaderModule mod;
    VkPipeline pipe;
    r->status = ST_FAILED;
    if (vkCreateDescriptorSetLayout(g->dev, &li, NULL, &dsl) != VK_SUCCESS) return;
    VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, j->pc_size };
    VkPipelineLayoutCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &dsl,
                                      .pushConstantRangeCount = j->pc_size ? 1u : 0u, .pPushConstantRanges = &pr };
    if (vkCreatePipelineLayout(g->dev, &pi, NULL, &layout) != VK_SUCCESS) goto out_dsl;
    uint32_t *code = malloc(j->blob->size);
    if (!code) goto out_layout;
    memcpy(code, j->blob->data, j->blob->size);
    VkShaderModuleCreateInfo smi = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = j->blob->size, .pCode = code };
    VkResult vr = vkCreateShaderModule(g->dev, &smi, NULL, &mod);
    free(code);
    if (vr != VK_SUCCESS) goto out_layout;
    VkSpecializationMapEntry me[VKP_MAX_SPEC];
    for (uint32_t i = 0; i < j->n_spec; i++) me[i] = (VkSpecializationMapEntry){ i, i * 4, 4 };
    VkSpecializationInfo si = { .mapEntryCount = j->n_spec, .pMapEntries = me, .dataSize = j->n_spec * 4, .pData = j->spec };
    /* as vk_pipeline_get: the widest subgroup, full subgroups, when the device has size control */
    const bool sized = (j->subgroup || j->cm) && g->sg_control;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
                                                               .requiredSubgroupSize = j->cm ? g->cm.coopmat_sg : g->sg_max };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                   .pNext = sized ? &rs : NULL, .flags = sized ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
                   .module = mod, .pName = "main", .pSpecializationInfo = j->n_spec ? &si : NULL },
        .layout = layout };
    const double t0 = now_ms();
    vr = vkCreateComputePipelines(g->dev, VK_NULL_HANDLE, 1, &ci, NULL, &pipe);
    r->ms = now_ms() - t0;
    vkDestroyShaderModule(g->dev, mod, NULL);
    if (vr != VK_SUCCESS) goto out_layout;
    VkPipelineInfoKHR pinfo = { .sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipe };
    VkPipelineExecutablePropertiesKHR ep = { .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR };
    uint32_t n_exe = 1;
    VkPipelineExecutableStatisticKHR st[64];
    uint32_t n_st = 64;
    if (vkGetPipelineExecutablePropertiesKHR(g->dev, &pinfo, &n_exe, &ep) >= 0 && n_exe == 1) {
        VkPipelineExecutableInfoKHR ei = { .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipe, .executableIndex = 0 };
        for (uint32_t i = 0; i < n_st; i++) st[i] = (VkPipelineExecutableStatisticKHR){ .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR };
        if (vkGetPipelineExecutableStatisticsKHR(g->dev, &ei, &n_st, st) >= 0) {
            r->wave = ep.subgroupSize;
            for (uint32_t i = 0; i < n_st; i++) {
                const char *nm = st[i].name;
                unsigned v = stat_u(&st[i]);
                if (stat_is(nm, "vgprs")) r->vgprs = v;
                else if (stat_is(nm, "sgprs")) r->sgprs = v;
                else if (stat_is(nm, "spilled_vgprs")) r->spill_v = v;
                else if (stat_is(nm, "spilled_sgprs")) r->spill_s = v;
                else if (stat_is(nm, "scratch_size")) r->scratch = v;
                else if (stat_is(nm, "code_size")) r->code = v;
                else if (stat_is(nm, "subgroups_per_simd")) r->waves = v;
                else if (stat_is(nm, "lds_size")) r->lds = v;
            }
            r->status = r->vgprs ? ST_OK : ST_FAILED; /* no VGPR statistic: not ACO's report */
        }
    }
    vkDestroyPipeline(g->dev, pipe, NULL);
out_layout:
    vkDestroyPipelineLayout(g->dev, layout, NULL);
out_dsl:
    vkDestroyDescriptorSetLayout(g->dev, dsl, NULL);
}

static int worker(const char *family, int start, result *res) {
    setenv("RADV_FORCE_FAMILY", family, 1);
    /* Mesa's shader cache as the caller sets it (gate.sh: a persistent one, keyed by Mesa on
     * the SPIR-V, constants, driver build and family; a hit returns the statistics ACO
     * reported when it compiled, checked identical to a fresh compile) */
    gpu g;
    int rc = open_device(family, &g);
    if (rc) return rc;
    for (int i = start; i < g_n_jobs; i++) {
        if (g_jobs[i].dup_of >= 0) { res[i].status = ST_SKIPPED; continue; }
        job j = g_jobs[i];
        if (j.cm) { /* only on an advertised configuration, with its constants */
            if (!g.cm.coopmat) { res[i].status = ST_NO_COOPMAT; continue; }
            vk_coopmat_spec(&g.cm, j.spec);
            j.n_spec = 7;
        }
        res[i].status = ST_RUNNING; /* a crash from here on is this pipeline's */
        compile_one(&g, &j, &res[i]);
    }
    vkDestroyDevice(g.dev, NULL);
    vkDestroyInstance(g.inst, NULL);
    return 0;
}

/* One family: workers until every job has a result; a dead worker's job is CRASHED. */
static int supervise(const char *family, result *res) {
    int start = 0;
    while (start < g_n_jobs) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) return 3;
        if (pid == 0) _exit(worker(family, start, res));
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77) return 77;
        int i = start;
        while (i < g_n_jobs && res[i].status != ST_RUNNING) i++;
        if (i == g_n_jobs) return 3; /* died outside a pipeline */
        res[i].status = ST_CRASHED;
        fprintf(stderr, "%s: the compiler died on %s (%s %d); going on after it\n", family, g_jobs[i].name,
                WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        start = i + 1;
    }
    return 0;
}

static const char *status_name(int s) {
    static const char *const n[] = { "pending", "running", "ok", "FAILED", "CRASHED", "dup", "no-coopmat" };
    return n[s];
}

int main(int argc, char **argv) {
    int jobs = 2;
    const char *tsv = NULL, *only = NULL;
    bool all_paths = false;
    const char *fam[16];
    int n_fam = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--jobs") && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) tsv = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--all-paths")) all_paths = true;
        else if (argv[i][0] != '-' && n_fam < 16) fam[n_fam++] = argv[i];
        else { fprintf(stderr, "usage: aco_pipestats [--jobs N] [--tsv FILE] [--all-paths] [--only SUBSTR] FAMILY...\n"); return 2; }
    }
    if (!n_fam || jobs < 1) { fprintf(stderr, "aco_pipestats: name at least one family (e.g. navi31)\n"); return 2; }
    if (!build_jobs(all_paths, only)) return 2;
    int n_unique = 0;
    for (int i = 0; i < g_n_jobs; i++) n_unique += g_jobs[i].dup_of < 0;
    size_t bytes = (size_t)n_fam * (size_t)g_n_jobs * sizeof(result);
    result *res = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED) { perror("mmap"); return 2; }
    memset(res, 0, bytes);
    const double t0 = now_ms();
    int fam_rc[16] = { 0 };
    pid_t sup[16];
    int running = 0, next = 0;
    while (next < n_fam || running) { /* up to `jobs` families at once, each under its supervisor */
        if (next < n_fam && running < jobs) {
            fflush(NULL);
            pid_t p = fork();
            if (p < 0) { perror("fork"); return 2; }
            if (p == 0) _exit(supervise(fam[next], res + (size_t)next * g_n_jobs));
            sup[next++] = p;
            running++;
            continue;
        }
        int st = 0;
        pid_t p = wait(&st);
        if (p < 0) break;
        for (int f = 0; f < next; f++)
            if (sup[f] == p) fam_rc[f] = WIFEXITED(st) ? WEXITSTATUS(st) : 3;
        running--;
    }
    const double wall = now_ms() - t0;

    FILE *tf = tsv ? fopen(tsv, "w") : NULL;
    if (tsv && !tf) { fprintf(stderr, "aco_pipestats: cannot write %s\n", tsv); return 2; }
    if (tf) fprintf(tf, "family\tpipeline\tclass\tstatus\twave\tvgprs\tsgprs\tspilled_vgprs\tspilled_sgprs\tscratch\tcode\twaves_per_simd\tlds\tms\n");
    int failed_total = 0, skipped_families = 0;
    printf("ACO gate: %d pipelines (%d distinct) x %d families, %d at once, %.1f s\n", g_n_jobs, n_unique, n_fam, jobs, wall / 1e3);
    printf("VGPR budgets:");
    for (int c = 0; c < N_CLASSES; c++) printf(" %s %u%s", k_budgets[c].cls, k_budgets[c].budget, c + 1 < N_CLASSES ? "," : "\n");
    printf("| family | pipelines | failed | crashed | spilling | over budget |");
    for (int c = 0; c < N_CLASSES; c++) printf(" max VGPRs %s |", k_budgets[c].cls);
    printf(" min waves/SIMD | compile s |\n|---|---|---|---|---|---|");
    for (int c = 0; c < N_CLASSES; c++) printf("---|");
    printf("---|---|\n");
    for (int f = 0; f < n_fam; f++) {
        const result *r = res + (size_t)f * g_n_jobs;
        if (fam_rc[f] == 77) { printf("| %s | skipped: no RADV null device for this family |\n", fam[f]); skipped_families++; continue; }
        int n = 0, nfail = 0, ncrash = 0, nspill = 0, nover = 0, maxv_i[N_CLASSES], minw_i = -1, n_nocm = 0;
        unsigned maxv[N_CLASSES] = { 0 };
        double ms = 0;
        for (int c = 0; c < N_CLASSES; c++) maxv_i[c] = -1;
        for (int i = 0; i < g_n_jobs; i++) {
            const result *x = r[i].status == ST_SKIPPED ? &r[g_jobs[i].dup_of] : &r[i]; /* a duplicate has its twin's result */
            if (x->status == ST_NO_COOPMAT) { n_nocm++; continue; } /* never created on this family (vk_coopmat.c) */
            const int c = class_of(g_jobs[i].name);
            n++;
            ms += r[i].ms;
            const bool fail = x->status == ST_FAILED || x->status == ST_PENDING || x->status == ST_RUNNING;
            const bool spill = x->spill_v || x->spill_s || x->scratch;
            const bool over = x->status == ST_OK && x->vgprs > k_budgets[c].budget;
            nfail += fail; ncrash += x->status == ST_CRASHED; nspill += spill; nover += over;
            if (x->status == ST_OK && (maxv_i[c] < 0 || x->vgprs > maxv[c])) { maxv[c] = x->vgprs; maxv_i[c] = i; }
            if (x->status == ST_OK && (minw_i < 0 || x->waves < r[minw_i].waves)) minw_i = (int)(x - r);
            if (fail || x->status == ST_CRASHED || spill || over)
                fprintf(stderr, "%s: %s: %s%s%s (VGPRs %u, budget %u, spilled %u/%u, scratch %u)\n", fam[f], g_jobs[i].name,
                        fail ? "compile failed" : x->status == ST_CRASHED ? "compiler crash" : "", spill ? " SPILL" : "",
                        over ? " over budget" : "", x->vgprs, k_budgets[c].budget, x->spill_v, x->spill_s, x->scratch);
            if (tf)
                fprintf(tf, "%s\t%s\t%s\t%s\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%.1f\n", fam[f], g_jobs[i].name, k_budgets[c].cls,
                        status_name(r[i].status), x->wave, x->vgprs, x->sgprs, x->spill_v, x->spill_s, x->scratch, x->code, x->waves, x->lds, r[i].ms);
        }
        if (fam_rc[f] != 0) nfail++;
        failed_total += nfail + ncrash + nspill + nover;
        printf("| %s | %d | %d | %d | %d | %d |", fam[f], n, nfail, ncrash, nspill, nover);
        for (int c = 0; c < N_CLASSES; c++) {
            if (maxv_i[c] >= 0) printf(" %u (%s) |", maxv[c], g_jobs[maxv_i[c]].name);
            else printf(" - |");
        }
        if (minw_i >= 0) printf(" %u (%s) | %.1f |\n", r[minw_i].waves, g_jobs[minw_i].name, ms / 1e3);
        else printf(" - | %.1f |\n", ms / 1e3);
        if (n_nocm) fprintf(stderr, "%s: %d coopmat pipelines not created (no advertised cooperative-matrix configuration)\n", fam[f], n_nocm);
    }
    if (tf) fclose(tf);
    if (skipped_families == n_fam) { printf("ACO gate skipped: RADV's null device is not available here\n"); return 77; }
    printf("ACO gate %s\n", failed_total ? "FAILED (see the lines above on stderr)" : "passed");
    return failed_total ? 1 : 0;
}
