/*
 * rng.c -- xoshiro256** and splitmix64 (Blackman & Vigna, public domain,
 * https://prng.di.unimi.it/) and the distributions built on them.
 */
#include "rng.h"

#include <math.h>

static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void
mt_rng_seed(struct mt_rng *r, uint64_t seed)
{
    uint64_t x = seed;

    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

void
mt_rng_split(struct mt_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = stream;

    mt_rng_seed(r, seed ^ splitmix64(&x));
}

uint64_t
mt_rng_next(struct mt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double
mt_rng_uniform(struct mt_rng *r)
{
    return (double)(mt_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t
mt_rng_below(struct mt_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)mt_rng_next(r) * n) >> 64);
}

double
mt_rng_exp(struct mt_rng *r, double mean)
{
    return -mean * log1p(-mt_rng_uniform(r));
}

double
mt_rng_normal(struct mt_rng *r)
{
    double u, v, s;

    do {
        u = 2.0 * mt_rng_uniform(r) - 1.0;
        v = 2.0 * mt_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

double
mt_rng_lognormal(struct mt_rng *r, double mean, double cv)
{
    double s2, mu;

    if (cv <= 0.0 || mean <= 0.0)
        return mean;
    s2 = log1p(cv * cv);
    mu = log(mean) - s2 / 2.0;
    return exp(mu + sqrt(s2) * mt_rng_normal(r));
}
