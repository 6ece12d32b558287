/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay.c - the main of a fuzz target where libFuzzer is not linked in (the builds of
 * gcc, plain and ASan): runs each input file given, or each file of each directory given (a
 * target's corpus, tests/fuzz/corpus/TARGET/), once, in order, through the target's
 * LLVMFuzzerInitialize and LLVMFuzzerTestOneInput, as libFuzzer runs a corpus before it
 * fuzzes; arguments that begin with '-' (libFuzzer's flags) are passed over. A finding
 * aborts, as under libFuzzer; at the end one line says how many ran.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n > 0 ? (size_t)n : 0);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    int runs = 0, bad = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct dirent **names;
        struct stat st;
        int n;

        if (argv[i][0] == '-')
            continue;           /* libFuzzer's flags */
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            n = scandir(argv[i], &names, NULL, by_name);
            for (int k = 0; k < n; k++) {
                char path[4096];

                if (names[k]->d_name[0] != '.') {
                    snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
                    bad |= run_file(path);
                    runs++;
                }
                free(names[k]);
            }
            if (n >= 0)
                free(names);
            bad |= n < 0;
        } else {
            bad |= run_file(argv[i]);
            runs++;
        }
    }
    printf("fuzz_replay: %d inputs ran\n", runs);
    return bad ? 1 : 0;
}
