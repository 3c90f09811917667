"""The transformers config of an exported checkpoint (`export.hf`): the project's own
`StructEncoderConfig` (hf_code/) or, for stock roberta that transformers computes exactly, its
`RobertaConfig`."""

from typing import Any, Dict, Optional

from fairseq_struct.export.hf_checkpoint import (
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
    FairseqCheckpoint,
    UnsupportedCheckpoint,
    checkpoint_labels,
    checkpoint_option,
    is_stock_roberta,
    lm_head_is_tied,
)


def uses_native_roberta(checkpoint: FairseqCheckpoint) -> bool:
    """transformers' own Roberta classes compute exactly this checkpoint."""
    if not is_stock_roberta(checkpoint):
        return False
    args, encoder = checkpoint.args, checkpoint.sentence_encoder
    layer = encoder.layers[0]
    return (
        checkpoint.kind in (MASKED_LM, SEQUENCE_CLASSIFICATION)
        and checkpoint_option(args, "activation_fn", "gelu") == "gelu"  # RobertaLMHead's fixed gelu
        and checkpoint_option(args, "pooler_activation_fn", "tanh")
        == "tanh"  # its classifier's tanh
        and not layer.normalize_before
        and encoder.layernorm_embedding is not None
        and encoder.embed_scale == 1.0
        and encoder.embed_positions is not None
    )


def struct_config(checkpoint: FairseqCheckpoint) -> Any:
    """The StructEncoderConfig of a checkpoint (remote code)."""
    from fairseq_struct.export.hf_code.configuration_struct_encoder import StructEncoderConfig

    args, encoder, dictionary = checkpoint.args, checkpoint.sentence_encoder, checkpoint.dictionary
    layer = encoder.layers[0]
    values = _common_config_values(checkpoint)
    values.update(
        hidden_act=str(checkpoint_option(args, "activation_fn", "gelu")),
        activation_dropout=layer.activation_dropout_module.p,
        normalize_before=bool(layer.normalize_before),
        layernorm_embedding=encoder.layernorm_embedding is not None,
        embed_scale=float(encoder.embed_scale),
        classifier_activation=str(checkpoint_option(args, "pooler_activation_fn", "tanh")),
        unk_token_id=dictionary.unk(),
        mask_token_id=mask_index(dictionary),
    )
    values.update(_position_options(checkpoint))
    values.update(_attention_options(checkpoint))
    values.update(_token_embedding_options(checkpoint))
    if checkpoint.kind == MASKED_LM:
        lm_head = checkpoint.model.encoder.lm_head
        values.update(
            output_vocab_size=lm_head.bias.numel(), tie_lm_head=lm_head_is_tied(checkpoint)
        )
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        head = checkpoint.model.classification_heads[checkpoint.head_name]
        values.update(
            token_head=str(head.head_type),
            token_head_layers=1 if head.dense is None else 2,
            entity_fix=bool(checkpoint.task.cfg.entity_fix),
        )
    return StructEncoderConfig(**values)


def mask_index(dictionary: Any) -> Optional[int]:
    return dictionary.indices.get("<mask>")


def _position_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    encoder = checkpoint.sentence_encoder
    if is_stock_roberta(checkpoint):
        positions = encoder.embed_positions
        return dict(
            position_embedding="fairseq_learned" if positions is not None else "none",
            max_position_embeddings=(
                positions.num_embeddings if positions is not None else checkpoint.args.max_positions
            ),
            num_segments=0,
        )
    options = encoder.structure_options
    table = encoder.embed_positions.embedding.positions if encoder.embed_positions else None
    return dict(
        position_embedding=options.position_embedding,
        max_position_embeddings=(
            table.num_embeddings if table is not None else encoder.max_source_positions
        ),
        max_intermediate_subwords=options.max_intermediate_subwords,
        subword_id_strategy=options.subword_id_strategy,
        num_segments=options.num_segments,
        restart_word_positions=options.restart_word_positions,
    )


def _attention_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    if is_stock_roberta(checkpoint):
        return {}
    from fairseq_struct.models.struct_encoder import _WholeWordSelfAttention

    encoder = checkpoint.sentence_encoder
    options = encoder.structure_options
    attention = encoder.layers[0].self_attn
    values: Dict[str, Any] = dict(
        relative_positions=options.relative_positions,
        whole_word_attention=options.whole_word_attention,
    )
    if isinstance(attention, _WholeWordSelfAttention):
        wwa = attention.attention
        values.update(
            wwa_window=wwa.window,
            wwa_max_relative_position=wwa.word_relative_positions.max_relative_position,
            relative_positions=0,  # WWA has its own relative positions
        )
    return values


def _token_embedding_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    embed = checkpoint.sentence_encoder.embed_tokens
    if not hasattr(embed, "embedder"):  # an nn.Embedding table
        if embed.num_embeddings != len(checkpoint.dictionary):
            raise UnsupportedCheckpoint(
                f"{checkpoint.path}: the embedding table has {embed.num_embeddings} rows but the "
                f"dictionary {len(checkpoint.dictionary)} symbols (pass --data with the "
                "dictionary the model was trained with)"
            )
        return dict(token_embedding="table")
    cnn = embed.embedder
    return dict(
        token_embedding="characters",
        char_embed_dim=cnn.char_embed.embedding_dim,
        num_characters=cnn.char_embed.num_embeddings,
        max_word_chars=embed.max_chars,
        char_filters=[[conv.kernel_size[0], conv.out_channels] for conv in cnn.convolutions],
        num_highway=len(cnn.highways),
    )


def roberta_config(checkpoint: FairseqCheckpoint) -> Any:
    from transformers import RobertaConfig

    values = _common_config_values(checkpoint)
    values.update(
        hidden_act="gelu",
        max_position_embeddings=checkpoint.sentence_encoder.embed_positions.num_embeddings,
        type_vocab_size=1,
    )
    if checkpoint.kind == MASKED_LM:
        values["tie_word_embeddings"] = lm_head_is_tied(checkpoint)
    return RobertaConfig(**values)


def _common_config_values(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    """What both configurations (remote code and transformers' Roberta) take from a checkpoint
    the same way: sizes, dropouts, special symbols, the source, and a fine-tune's labels."""
    args, encoder, dictionary = checkpoint.args, checkpoint.sentence_encoder, checkpoint.dictionary
    layer = encoder.layers[0]
    values: Dict[str, Any] = dict(
        vocab_size=len(dictionary),
        hidden_size=layer.fc1.in_features,
        num_hidden_layers=len(encoder.layers),
        num_attention_heads=args.encoder_attention_heads,
        intermediate_size=layer.fc1.out_features,
        hidden_dropout_prob=layer.dropout_module.p,
        attention_probs_dropout_prob=checkpoint_option(args, "attention_dropout", 0.0),
        layer_norm_eps=layer.final_layer_norm.eps,
        classifier_dropout=checkpoint_option(args, "pooler_dropout", 0.0),
        pad_token_id=dictionary.pad(),
        bos_token_id=dictionary.bos(),
        eos_token_id=dictionary.eos(),
        fairseq_arch=checkpoint_option(args, "arch"),
        fairseq_task=checkpoint.task_name,
    )
    if checkpoint.kind != MASKED_LM:
        labels, problem_type = checkpoint_labels(checkpoint)
        values.update(
            id2label=dict(enumerate(labels)),
            label2id={label: index for index, label in enumerate(labels)},
            problem_type=problem_type,
        )
    return values
